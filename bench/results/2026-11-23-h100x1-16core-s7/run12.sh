#!/bin/bash
# Session 7, device call 12 (nvidia-h100-x1, 1x16): old (696c9c3) vs final3
# (430d192: + KeyState), C client b2b 4 B-64 KiB, auto after 3000 calls
# against fixed plans, 3 runs per build interleaved; gocall go-dpml.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((420 - ($(date +%s) - T0))); }
{ date -u; nproc; for d in old final3; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
V="native,auto,dpml:intra=tree,r=4,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
for r in 1 2 3; do for lib in old final3; do
  [ $(left) -lt 25 ] && break
  echo "+ $ONE -x LD_PRELOAD=.devbin/$lib/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,32,64,256,1K,2K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-b2b-$r" >> $OUT/commands.txt
  timeout 60 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,32,64,256,1K,2K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-b2b-$r > $OUT/c-$lib-$r.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done; done
for r in 1 2; do for lib in old final3; do
  echo "+ gocall $lib $r" >> $OUT/commands.txt
  timeout 30 $ONE .devbin/$lib/gocall -variants go-dpml -sizes 8,4,64,512,4096 -reps 2 -label $lib > $OUT/gocall-$lib-$r.log 2>&1
done; done
