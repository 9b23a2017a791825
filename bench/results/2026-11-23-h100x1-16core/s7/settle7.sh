#!/bin/bash
# settle.sh OUT: the tuner A/B (o6 = session start ef853c1, n6 = mean-exit cost), 1x16.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for r in 1 2; do for lib in n6 n7; do for pat in b2b skew; do
  timeout 60 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/n6/dpmlbench-c -pattern $pat -sizes 4,64,1K,16K -time 300ms -tune-calls 5000 -max-iters 20000 -check -quiet -variants native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=4,intra=shm,dpml:l=16,intra=shm -out $OUT/settle-$lib-$pat-$r > $OUT/settle-$lib-$pat-$r.log 2>&1
  echo "settle $lib $pat $r rc=$?"
done; done; done
