#!/bin/bash
# Session 6, device call 4 (nvidia-h100-x1, 1x16): the learner's statistic
# with the last-exit cost (s8 build): min of 3 (default), trimmed mean of 8,
# median of 8; C client, b2b, settled auto against fixed plans, 2 rounds.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((400 - ($(date +%s) - T0))); }
{ date -u; cat .devbin/s8/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
for r in 1 2 3; do for cfg in min3 trimmed8 median8; do
  [ $(left) -lt 30 ] && break
  case $cfg in min3) env="";; trimmed8) env="-x DPML_TUNER_STAT=trimmed -x DPML_TUNER_SAMPLES=8";; median8) env="-x DPML_TUNER_STAT=median -x DPML_TUNER_SAMPLES=8";; esac
  cmd="$ONE -x LD_PRELOAD=$PWD/.devbin/s8/libdpml.so $env .devbin/s8/dpmlbench-c -pattern b2b -sizes 4,64,256,1K,4K,16K -time 200ms -tune-calls 3000 -max-iters 20000 -check -quiet -variants $V -out $OUT/settle-$cfg-b2b-$r"
  echo "+ $cmd" >> $OUT/commands.txt
  timeout $(( $(left) < 60 ? $(left) : 60 )) $cmd > $OUT/settle-$cfg-b2b-$r.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
done; done
