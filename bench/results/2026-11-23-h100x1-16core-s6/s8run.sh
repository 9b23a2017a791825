#!/bin/bash
# Session 6, device call 3 (nvidia-h100-x1, 1x16): the C client, settled auto
# against fixed plans with s8 (last exit, links, DPML_GOSCHED applied in the
# drop-in), auto measured second (after native) and last; s7 (the same tuner,
# drop-in without DPML_GOSCHED) beside it; b2b and skew.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((550 - ($(date +%s) - T0))); }
{ date -u; cat .devbin/s8/COMMIT; lscpu | head -20; mpirun --version; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
F="dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
S="4,64,256,1K,4K,16K,256K"
for r in 1 2; do for run in s8-b2b s8last-b2b s7-b2b s8-skew; do
  [ $(left) -lt 30 ] && break
  lib=${run%%-*}; pat=${run#*-}; V="native,auto,$F"
  [ $lib = s8last ] && { lib=s8; V="native,$F,auto"; }
  cmd="$ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/s8/dpmlbench-c -pattern $pat -sizes $S -time 200ms -tune-calls 3000 -max-iters 20000 -check -quiet -variants $V -out $OUT/settle-$run-$r"
  echo "+ $cmd" >> $OUT/commands.txt
  timeout $(( $(left) < 70 ? $(left) : 70 )) $cmd > $OUT/settle-$run-$r.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
done; done
