#!/bin/bash
# Session 15, device call 4 (nvidia-h100-x1, 16 cores). Issue 17: the Go
# benchmark dpmlbench built from new (728c8e3) against fast (new plus the
# Go clearance: a Go caller's settled calls skip the engine's per-call
# work), and the C client dpmlbench-c with libdpml.so (new), b2b, 4 B-64
# KiB, 1000 tuning calls, native and auto; 1x16 (3 runs each, in turn)
# and 4x4 (dpmlrun's emulated nodes, 1 each); then 4 B-64 MiB with 300
# tuning calls, 1x16, fast and C, 1 run each.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
for f in .devbin/*/*.gz; do gunzip -kf $f; done; chmod +x .devbin/*/dpmlbench .devbin/*/dpmlrun .devbin/*/gocall 2>/dev/null
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; cat /sys/devices/system/clocksource/clocksource0/current_clocksource; for d in cur new fast; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
EMU=".devbin/cur/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4"
log() { echo "+ $*" >> $OUT/commands.txt; }
run() { # run NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  [ $(left) -lt $((to / 2)) ] && { echo "skipped $name ($(left) s left)" >> $OUT/commands.txt; return; }
  log "$*"
  timeout $to "$@" > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 )) ($name)" >> $OUT/commands.txt
}
L=$PWD/.devbin/new/libdpml.so
SM="-pattern b2b -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet"
for r in 1 2 3; do
  run c-1x16-$r 40 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $SM -variants native,auto -out $OUT/c-1x16-$r
  for b in new fast; do
    run go$b-1x16-$r 40 $ONE -x DPML_VERBOSE=1 .devbin/$b/dpmlbench run $SM -variants native,auto -plots=false -out $OUT/go$b-1x16-$r
  done
done
EMUX="-- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 --"
run c-4x4-1 60 $EMU -preload $L $EMUX $C $SM -variants native,auto -out $OUT/c-4x4-1
for b in new fast; do run go$b-4x4-1 60 $EMU $EMUX .devbin/$b/dpmlbench run $SM -variants native,auto -plots=false -out $OUT/go$b-4x4-1; done
for r in 1 2; do run gocall-fast-$r 40 $ONE .devbin/fast/gocall -variants go-dpml -sizes 4,16,64,256,1024,4096,8192 -settle calls:50ms -label fast-$r -header; done
FULL="-pattern b2b -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 300 -check -quiet"
run c-1x16-full 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $FULL -variants native,auto -out $OUT/c-1x16-full
run gofast-1x16-full 120 $ONE -x DPML_VERBOSE=1 .devbin/fast/dpmlbench run $FULL -variants native,auto -plots=false -out $OUT/gofast-1x16-full
for f in $OUT/*.log; do grep -v "^libdpml:   DPML_\|^DPML_" $f > $f.t && mv $f.t $f; done
