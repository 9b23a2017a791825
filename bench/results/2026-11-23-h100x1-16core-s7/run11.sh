#!/bin/bash
# Session 7, device call 11 (nvidia-h100-x1, 1x16): the learner's statistic
# on the device, DPML_TUNER_STAT=min (default) vs median vs trimmed,
# alternating, 3 runs each; C client b2b, auto after 3000 calls against
# the fixed plans of the same run.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((420 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/final2/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
V="native,auto,dpml:intra=tree,r=4,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
for r in 1 2 3; do for st in min median trimmed; do
  [ $(left) -lt 25 ] && break
  echo "+ DPML_TUNER_STAT=$st run $r: $ONE -x DPML_TUNER_STAT=$st -x LD_PRELOAD=.devbin/final2/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,32,64,256,1K,2K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V" >> $OUT/commands.txt
  timeout 60 $ONE -x DPML_TUNER_STAT=$st -x LD_PRELOAD=$PWD/.devbin/final2/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,32,64,256,1K,2K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$st-b2b-$r > $OUT/$st-$r.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done; done
