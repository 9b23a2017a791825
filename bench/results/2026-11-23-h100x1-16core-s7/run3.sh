#!/bin/bash
# Session 7, device call 3 (nvidia-h100-x1, 1x16): is it the waits? go-floor
# with bare spins vs through shm.Waiter (go-floor-w), and the engine (Go API
# and the C client, tree r=4) under DPML_SPIN = 2000 (default), 20000, 200000.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((420 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/new/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && { echo "skip $name" >> $OUT/commands.txt; return; }
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
for r in 1 2 3; do
  run floor-$r 40 $ONE .devbin/new/floor -rounds 3 -iters 50000
  run gofloor-$r 60 $ONE .devbin/new/gocall -variants go-floor,go-floor-w -sizes 8,56 -reps 3 -time 0.2 -min-iters 50000 -max-iters 50000
  for sp in 2000 20000 200000; do
    run go-spin$sp-$r 60 $ONE -x DPML_SPIN=$sp -x DPML_INTRA=tree -x DPML_TREE_RADIX=4 .devbin/new/gocall -variants go-dpml -sizes 8,56 -reps 3 -time 0.2 -min-iters 50000 -max-iters 50000 -label spin$sp
    run c-spin$sp-$r 60 $ONE -x DPML_SPIN=$sp -x LD_PRELOAD=$PWD/.devbin/new/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes 8,56 -time 200ms -max-iters 50000 -quiet -variants native,dpml:intra=tree,r=4 -out $OUT/c-spin$sp-$r
  done
done
