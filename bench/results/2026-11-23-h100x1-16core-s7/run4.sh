#!/bin/bash
# Session 7, device call 4 (nvidia-h100-x1): what the drop-in adds per call.
# 2 ranks and 16 ranks, tree r=4 forced: the Go API (gocall go-dpml) vs a C
# loop (gocall-c) with libdpml.so (new = d060055, new2 = + lock-free engine
# lookup and the per-thread attribute memo), and dpmlbench-c without
# per-call timing.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((480 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/new/COMMIT .devbin/new2/COMMIT; } > $OUT/machine.txt 2>&1
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && { echo "skip $name" >> $OUT/commands.txt; return; }
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
for np in 2 16; do
ONE="mpirun --allow-run-as-root -np $np --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma -x DPML_INTRA=tree -x DPML_TREE_RADIX=4"
for r in 1 2 3; do
  run go-$np-$r 60 $ONE .devbin/new2/gocall -variants go-dpml,go-floor -sizes 8,56 -reps 2 -time 0.2 -min-iters 50000 -max-iters 50000 -label go
  for lib in new new2; do
    run cloop-$lib-$np-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/new/gocall-c -variants c -sizes 8,56 -reps 2 -time 0.2 -min-iters 50000 -max-iters 50000 -label $lib
    run cb-$lib-$np-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -percall=false -sizes 8,56 -time 200ms -max-iters 50000 -quiet -variants native,dpml:intra=tree,r=4 -out $OUT/cb-$lib-$np-$r
  done
done; done
