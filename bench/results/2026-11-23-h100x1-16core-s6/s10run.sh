#!/bin/bash
# Session 6, device call 5 (nvidia-h100-x1, 1x16): issue 16's switch counts.
# The C client with libdpml.so (s8 build, defaults), auto only, 100,000
# untimed settling calls per size then the timed calls; results.json has
# plan.switches (switches after first settling) and plan.changes per size.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((500 - ($(date +%s) - T0))); }
{ date -u; cat .devbin/s8/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for r in 1 2; do for pat in b2b skew; do
  [ $(left) -lt 60 ] && break
  S="4,64,1K,16K"; [ $pat = b2b ] && S="4,64,1K,16K,256K"
  cmd="$ONE -x LD_PRELOAD=$PWD/.devbin/s8/libdpml.so -x DPML_VERBOSE=1 .devbin/s8/dpmlbench-c -pattern $pat -sizes $S -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-$pat-$r"
  echo "+ $cmd" >> $OUT/commands.txt
  timeout $(( $(left) < 200 ? $(left) : 200 )) $cmd > $OUT/long-$pat-$r.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
done; done
