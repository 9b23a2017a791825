#!/bin/bash
# Session 7, device call 15 (nvidia-h100-x1, 1x16): the C client with the
# per-round shuffled order (d2465b3): old (696c9c3) against final5 (d2465b3),
# b2b 4 B-16 KiB, 3 runs per build interleaved.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((300 - ($(date +%s) - T0))); }
{ date -u; nproc; for d in old final5; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
V="native,auto,dpml:intra=tree,r=4,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
for r in 1 2 3; do for lib in old final5; do
  [ $(left) -lt 20 ] && break
  echo "+ $ONE -x LD_PRELOAD=.devbin/$lib/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,32,64,256,1K,2K,4K,16K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-b2b-$r" >> $OUT/commands.txt
  timeout 40 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,32,64,256,1K,2K,4K,16K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-b2b-$r > $OUT/c-$lib-$r.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done; done
