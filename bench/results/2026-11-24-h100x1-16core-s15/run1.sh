#!/bin/bash
# Session 15, device call 1 (nvidia-h100-x1, 16 cores; the 32-core kind is
# withheld this session). Build cur: the session's start (see machine.txt).
# Issue 17 at every size: dpml.Allreduce from Go (the Go benchmark
# dpmlbench, auto) against the C client dpmlbench-c with libdpml.so
# preloaded (auto), both with the MPI library's allreduce (native) in the
# same run, b2b, 4 B-64 MiB, 1x16 (2 runs each, alternating) and 4x4
# (dpmlrun's emulated nodes, 1 run each). Issues 15/16: the C client over
# 4 B-64 MiB with the fixed plans. The 1 KiB loss: the C client at 1 KiB
# and bench/diag/series ALT under DPML_GOSCHED auto, pace and off.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c; G=.devbin/cur/dpmlbench; L=$PWD/.devbin/cur/libdpml.so
{ date -u; nproc; lscpu | head -20; echo "cur: $(cat .devbin/cur/COMMIT)"; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
EMU=".devbin/cur/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4"
log() { echo "+ $*" >> $OUT/commands.txt; }
FULL="-pattern b2b -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet"
run() { # run NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  [ $(left) -lt $((to / 2)) ] && { echo "skipped $name ($(left) s left)" >> $OUT/commands.txt; return; }
  log "$*"
  timeout $to "$@" > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 )) ($name)" >> $OUT/commands.txt
}
for r in 1 2; do
  run c-1x16-$r 70 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $FULL -variants native,auto -out $OUT/c-1x16-$r
  run go-1x16-$r 70 $ONE -x DPML_VERBOSE=1 $G run $FULL -variants native,auto -plots=false -out $OUT/go-1x16-$r
done
run c-4x4-1 90 $EMU -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C $FULL -variants native,auto -out $OUT/c-4x4-1
run go-4x4-1 90 $EMU -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $G run $FULL -variants native,auto -plots=false -out $OUT/go-4x4-1
V="native,auto,dpml:intra=tree,r=4,dpml:l=16,intra=shm"
for r in 1 2; do for m in auto pace off; do
  run k1-$m-$r 40 $ONE -x DPML_VERBOSE=1 -x DPML_GOSCHED=$m -x LD_PRELOAD=$L $C -pattern b2b -sizes 1K -time 100ms -max-iters 15000 -tune-calls 10000 -check -quiet -variants $V -out $OUT/k1-$m-$r
done; done
for r in 1 2; do for m in auto pace; do
  run ser-$m-$r 40 $ONE -x DPML_VERBOSE=1 -x DPML_GOSCHED=$m -x LD_PRELOAD=$L .devbin/series/series 1024 40000 12000 1500
  run ser-tree-$m-$r 40 $ONE -x DPML_GOSCHED=$m -x DPML_INTRA=tree -x DPML_TREE_RADIX=4 -x LD_PRELOAD=$L .devbin/series/series 1024 40000 12000 1500
done; done
run c-1x16-fixed 90 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $FULL -variants native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm -out $OUT/c-1x16-fixed
