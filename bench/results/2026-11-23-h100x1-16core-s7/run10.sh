#!/bin/bash
# Session 7, device call 10 (nvidia-h100-x1, 1x16): why auto picks tree r=2
# at 2-4 KiB. C client b2b, auto with DPML_VERBOSE=1 (the learner's measured
# arms), under the three cost rules, with the fixed plans beside.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; nproc; cat .devbin/final2/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for r in 1 2; do for cost in second last mean; do
  echo "+ DPML_TUNER_COST=$cost run $r" >> $OUT/commands.txt
  timeout 60 $ONE -x DPML_TUNER_COST=$cost -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/final2/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 512,2K,4K -time 150ms -max-iters 20000 -tune-calls 3000 -quiet -variants native,auto,dpml:intra=tree,r=2,dpml:intra=tree,r=4,dpml:l=16,intra=shm -out $OUT/c-$cost-$r > $OUT/$cost-$r.log 2>&1
done; done
