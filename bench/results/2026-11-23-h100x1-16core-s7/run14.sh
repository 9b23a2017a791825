#!/bin/bash
# Session 7, device call 14 (nvidia-h100-x1, 1x16): is auto's gap to its own
# plan the benchmark's order? dpmlbench-c rotates the points each round but
# keeps their cyclic order, so auto's batches follow native's. Order A:
# native,auto,tree r=4,l=16; order B: native,tree r=4,auto,l=16. final4.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((300 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/final4/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
A="native,auto,dpml:intra=tree,r=4,dpml:l=16,intra=shm"
B="native,dpml:intra=tree,r=4,auto,dpml:l=16,intra=shm"
for r in 1 2 3; do for o in A B; do
  [ $(left) -lt 20 ] && break
  V=${!o}
  echo "+ order $o run $r: $ONE -x LD_PRELOAD=.devbin/final4/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 8,32,1K,4K -time 150ms -max-iters 20000 -tune-calls 3000 -check -quiet -variants $V" >> $OUT/commands.txt
  timeout 40 $ONE -x LD_PRELOAD=$PWD/.devbin/final4/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 8,32,1K,4K -time 150ms -max-iters 20000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$o-b2b-$r > $OUT/c-$o-$r.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done; done
