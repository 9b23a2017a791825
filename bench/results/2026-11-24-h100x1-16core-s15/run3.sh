#!/bin/bash
# Session 15, device call 3 (nvidia-h100-x1, 16 cores). Builds as in
# run2.sh (cur: 5dcfe83; new: 728c8e3, the stride floor may pass
# MaxStride). (1) Issue 17: the Go benchmark (dpmlbench, new) and the C
# client (dpmlbench-c, libdpml.so new) with and without a clock read after
# every call (-percall), 4 B-64 KiB b2b, 1000 tuning calls, native and
# auto, 2 runs each, alternating; bench/diag/gocall go-dpml (a bare loop
# of dpml.Allreduce), 2 runs. (2) Issue 16: cur against new, C client, b2b
# (3 more runs each), skew (2 each) and barrier (1 each) at 4 B-64 KiB,
# and one run each over 4 B-64 MiB.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
for f in .devbin/*/*.gz; do gunzip -kf $f; done; chmod +x .devbin/*/dpmlbench .devbin/*/dpmlrun .devbin/*/gocall 2>/dev/null
C=.devbin/base/dpmlbench-c; G=.devbin/new/dpmlbench
{ date -u; nproc; lscpu | head -20; for d in cur new; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
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
for r in 1 2; do for pc in true false; do
  run c-pc$pc-1x16-$r 40 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $SM -percall=$pc -variants native,auto -out $OUT/c-pc$pc-1x16-$r
  run go-pc$pc-1x16-$r 40 $ONE -x DPML_VERBOSE=1 $G run $SM -percall=$pc -variants native,auto -plots=false -out $OUT/go-pc$pc-1x16-$r
done; done
for r in 1 2; do
  run gocall-dpml-$r 40 $ONE .devbin/new/gocall -variants go-dpml -sizes 4,16,64,256,1024,4096,8192 -settle calls:50ms -label auto-$r -header
done
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
SHORT="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet"
one() { # one BUILD PATTERN TAG TIMEOUT ARGS...
  local b=$1 pat=$2 tag=$3 to=$4; shift 4
  run c-$b-1x16-$pat-$tag $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$b/libdpml.so $C -pattern $pat "$@" -out $OUT/c-$b-1x16-$pat-$tag
}
for r in 4 5 6; do for b in cur new; do one $b b2b s$r 40 $SHORT -variants $V; done; done
for r in 1 2; do for b in cur new; do one $b skew s$r 40 $SHORT -variants $V; done; done
for b in cur new; do one $b barrier s1 40 $SHORT -variants $V; done
for b in new cur; do one $b b2b full 100 -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=16,intra=shm; done
for f in $OUT/*.log; do grep -v "^libdpml:   DPML_\|^DPML_" $f > $f.t && mv $f.t $f; done
