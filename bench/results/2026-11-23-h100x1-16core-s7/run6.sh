#!/bin/bash
# Session 7, device call 6 (nvidia-h100-x1, 1x16): why auto costs more than
# the fixed plan it settles on. C client b2b, auto (3000 settling calls) vs
# tree r=4 vs DPML_TUNER=model, with DPML_VERBOSE=1's tuner table (episodes,
# committed samples, stride at the end).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((400 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/new4/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && { echo "skip $name" >> $OUT/commands.txt; return; }
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
for r in 1 2; do
  run auto-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/new4/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes 8,32,1K -time 200ms -max-iters 30000 -tune-calls 3000 -quiet -variants native,auto,dpml:intra=tree,r=4,dpml:l=16,intra=shm -out $OUT/c-auto-$r
  run model-$r 60 $ONE -x DPML_TUNER=model -x LD_PRELOAD=$PWD/.devbin/new4/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes 8,32,1K -time 200ms -max-iters 30000 -tune-calls 3000 -quiet -variants native,auto,dpml:intra=tree,r=4,dpml:l=16,intra=shm -out $OUT/c-model-$r
done
