#!/bin/bash
# Session 10, device call 1 (nvidia-h100-x1, 16 cores; the 32-core kind was
# not lent): where a tree call above one cache line loses its time.
#  A. bench/diag/floor/lines (plain C: sep, tail, ll, llseq layouts), 1x16,
#     3 runs.
#  B. the engine (s9 build, C client dpmlbench-c, libdpml.so preloaded) at
#     8 B-1 KiB with tree r=4 and r=16 forced, b2b, 2 runs: the inline to
#     slot step at 56 -> 64 B.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; echo "s9: $(cat .devbin/s9/COMMIT)"; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
for r in 1 2 3; do
  log "$ONE .devbin/s10/lines -rounds 5 -iters 20000"
  timeout 90 $ONE .devbin/s10/lines -rounds 5 -iters 20000 > $OUT/lines-$r.txt 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done
V="native,dpml:intra=tree,r=4,dpml:intra=tree,r=16,dpml:l=16,intra=shm"
for r in 1 2; do
  name=c-s9-1x16-b2b-$r
  log "$ONE -x LD_PRELOAD=.devbin/s9/libdpml.so $C -pattern b2b -sizes 8,32,56,64,128,256,512,1K -time 100ms -max-iters 15000 -check -quiet -variants $V -out $OUT/$name"
  timeout 90 $ONE -x LD_PRELOAD=$PWD/.devbin/s9/libdpml.so $C -pattern b2b -sizes 8,32,56,64,128,256,512,1K -time 100ms -max-iters 15000 -check -quiet -variants $V -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done
