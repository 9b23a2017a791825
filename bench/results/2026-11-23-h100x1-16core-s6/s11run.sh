#!/bin/bash
# Session 6, device call 6 (nvidia-h100-x1, 1x16): the second-to-last exit
# (s11, e3e3ef1) against the last exit (s8) in the same call: settled auto
# against fixed plans (b2b, 2 rounds each; skew, 1 round), then s11's switch
# counts over 100,000 settling calls per size (b2b and skew, 2 rounds).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((450 - ($(date +%s) - T0))); }
{ date -u; cat .devbin/s11/COMMIT .devbin/s8/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && return
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
for r in 1 2; do for lib in s11 s8; do
  run settle-$lib-b2b-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/s11/dpmlbench-c -pattern b2b -sizes 4,64,256,1K,4K,16K,256K -time 200ms -tune-calls 3000 -max-iters 20000 -check -quiet -variants $V -out $OUT/settle-$lib-b2b-$r
done; done
run settle-s11-skew-1 60 $ONE -x LD_PRELOAD=$PWD/.devbin/s11/libdpml.so .devbin/s11/dpmlbench-c -pattern skew -sizes 4,64,256,1K,4K,16K,256K -time 200ms -tune-calls 3000 -max-iters 20000 -check -quiet -variants $V -out $OUT/settle-s11-skew-1
for r in 1 2; do
  run long-b2b-$r 90 $ONE -x LD_PRELOAD=$PWD/.devbin/s11/libdpml.so -x DPML_VERBOSE=1 .devbin/s11/dpmlbench-c -pattern b2b -sizes 4,64,1K,16K,256K -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-b2b-$r
  run long-skew-$r 90 $ONE -x LD_PRELOAD=$PWD/.devbin/s11/libdpml.so -x DPML_VERBOSE=1 .devbin/s11/dpmlbench-c -pattern skew -sizes 4,64,1K,16K -time 100ms -tune-calls 100000 -max-iters 20000 -check -quiet -variants native,auto -out $OUT/long-skew-$r
done
