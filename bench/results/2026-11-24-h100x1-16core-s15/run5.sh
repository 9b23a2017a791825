#!/bin/bash
# Session 15, device call 5 (nvidia-h100-x1, 16 cores). Issue 17 with the
# session's final code. Builds: fast (d5c37e5: the Go clearance) and
# fast2 (fast plus dpmlbench's timed loops reading Go's monotonic clock
# instead of mpi.Wtime, a cgo call; the C client reads MPI_Wtime); the C
# client dpmlbench-c with libdpml.so new (728c8e3; d5c37e5 changes only
# Go callers). b2b 4 B-64 KiB, 1000 tuning calls, native and auto: 1x16
# 3 runs each in turn, 4x4 1 run each. Then bench/diag/gocall.sh (mpi.Allreduce
# from Go against the same loop in C) 1x16 and 4x4, 2 rounds; and gocall
# go-dpml, 2 runs.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
for f in .devbin/*/*.gz; do gunzip -kf $f; done; chmod +x .devbin/*/dpmlbench .devbin/*/dpmlrun .devbin/*/gocall 2>/dev/null
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in new fast fast2; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
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
  for b in fast fast2; do
    run go$b-1x16-$r 40 $ONE -x DPML_VERBOSE=1 .devbin/$b/dpmlbench run $SM -variants native,auto -plots=false -out $OUT/go$b-1x16-$r
  done
done
EMUX="-- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 --"
run c-4x4-1 60 $EMU -preload $L $EMUX $C $SM -variants native,auto -out $OUT/c-4x4-1
run gofast2-4x4-1 60 $EMU $EMUX .devbin/fast2/dpmlbench run $SM -variants native,auto -plots=false -out $OUT/gofast2-4x4-1
mkdir -p /tmp/gbin && cp .devbin/fast/gocall .devbin/fast/gocall-c /tmp/gbin/ && gunzip -kc .devbin/cur/dpmlrun.gz > /tmp/gbin/dpmlrun && chmod +x /tmp/gbin/*
log "ROUNDS=2 DEADLINE=... bash bench/diag/gocall.sh $OUT/gocall /tmp/gbin \"1x16 4x4\""
[ $(left) -gt 150 ] && ROUNDS=2 DEADLINE=$(( $(left) - 70 )) bash bench/diag/gocall.sh $OUT/gocall /tmp/gbin "1x16 4x4" > $OUT/gocall.out 2>&1
echo "gocall.sh done at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
for r in 1 2; do run gocall-dpml-$r 40 $ONE .devbin/fast/gocall -variants go-dpml -sizes 4,16,64,256,1024,4096,8192 -settle calls:50ms -label fast-$r -header; done
for f in $OUT/*.log; do grep -v "^libdpml:   DPML_\|^DPML_" $f > $f.t && mv $f.t $f; done
