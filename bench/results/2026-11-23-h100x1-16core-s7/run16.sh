#!/bin/bash
# Session 7, device call 16 (nvidia-h100-x1, 1x16): switch counts over
# 100,000 settling calls per size (issue 16), final5 (d2465b3), b2b and
# skew, 1 run each; DPML_VERBOSE=1 for the tuner table.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((200 - ($(date +%s) - T0))); }
{ date -u; nproc; cat .devbin/final5/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for pat in b2b skew; do
  [ $(left) -lt 20 ] && break
  echo "+ $ONE -x LD_PRELOAD=.devbin/final5/libdpml.so -x DPML_VERBOSE=1 .devbin/final/dpmlbench-c -pattern $pat -sizes 4,64,1K,16K -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-final5-$pat-1" >> $OUT/commands.txt
  timeout 80 $ONE -x LD_PRELOAD=$PWD/.devbin/final5/libdpml.so -x DPML_VERBOSE=1 .devbin/final/dpmlbench-c -pattern $pat -sizes 4,64,1K,16K -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-final5-$pat-1 > $OUT/long-$pat.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done
