#!/bin/bash
# Session 7, device call 8 (nvidia-h100-x1, 1x16): DPML_SPIN default (4000)
# vs 100000, alternating, 6 runs each; C client b2b, tree r=4 and l=16.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((300 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/new5/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for r in 1 2 3 4 5 6; do for sp in 4000 100000; do
  [ $(left) -lt 15 ] && break
  echo "+ DPML_SPIN=$sp run $r" >> $OUT/commands.txt
  timeout 40 $ONE -x DPML_SPIN=$sp -x LD_PRELOAD=$PWD/.devbin/new5/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes 8,64,1K -time 150ms -max-iters 30000 -quiet -variants native,dpml:intra=tree,r=4,dpml:l=16,intra=shm -out $OUT/c-spin$sp-$r > $OUT/spin$sp-$r.log 2>&1
done; done
