#!/bin/bash
# Session 6, device call 7 (nvidia-h100-x1, 1x16): switch counts over
# 100,000 settling calls per size, s12 (9628cf0: hysteresis) against s11
# (e3e3ef1) in the same call, b2b and skew, 2 rounds; then s12 settled auto
# against fixed plans (b2b, 2 rounds).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((330 - ($(date +%s) - T0))); }
{ date -u; cat .devbin/s12/COMMIT .devbin/s11/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && return
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
for r in 1 2; do for lib in s12 s11; do
  run long-$lib-b2b-$r 40 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so -x DPML_VERBOSE=1 .devbin/s12/dpmlbench-c -pattern b2b -sizes 4,64,1K,16K -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-$lib-b2b-$r
  run long-$lib-skew-$r 40 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so -x DPML_VERBOSE=1 .devbin/s12/dpmlbench-c -pattern skew -sizes 4,64,1K,16K -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-$lib-skew-$r
done; done
for r in 1 2; do
  run settle-s12-b2b-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/s12/libdpml.so .devbin/s12/dpmlbench-c -pattern b2b -sizes 4,64,256,1K,4K,16K,256K -time 200ms -tune-calls 3000 -max-iters 20000 -check -quiet -variants $V -out $OUT/settle-s12-b2b-$r
done
