#!/bin/bash
# Session 10, device call 5 (nvidia-h100-x1, 16 cores): which setting of the
# drop-in's Go side costs the C caller its extra time per call (run3: the
# return into C and the call into Go took 300-450 ns per call where a Go
# caller's loop took about 40). The C client dpmlbench-c, libdpml.so
# preloaded, 1x16 b2b, native and tree r=4 at 8 and 64 B, 3 rounds of:
#   auto    the s10 build (untraced, GOEXPERIMENT=simd), DPML_GOSCHED=auto
#   pace    the same, DPML_GOSCHED=pace (GOMAXPROCS stays 1)
#   off     the same, DPML_GOSCHED=off
#   nosimd  the s10 code built without GOEXPERIMENT=simd, DPML_GOSCHED=auto
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s)
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
one() { # one TAG LIB GOSCHED ROUND
  local name=c-$1-$4
  log "$ONE -x DPML_GOSCHED=$3 -x LD_PRELOAD=.devbin/s10/$2 $C -pattern b2b -sizes 8,64 -time 200ms -max-iters 8000 -quiet -variants native,dpml:intra=tree,r=4 -out $OUT/$name"
  timeout 60 $ONE -x DPML_GOSCHED=$3 -x LD_PRELOAD=$PWD/.devbin/s10/$2 $C -pattern b2b -sizes 8,64 -time 200ms -max-iters 8000 -quiet -variants native,dpml:intra=tree,r=4 -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2 3; do
  one auto libdpml.so auto $r
  one pace libdpml.so pace $r
  one off libdpml.so off $r
  one nosimd libdpml-nosimd.so auto $r
done
for t in auto pace off nosimd; do for r in 1 2 3; do echo "$t $r: $(grep -h 'tree' $OUT/c-$t-$r.log | awk '{print $1, $6}' | tr '\n' ' ') native $(grep -h 'native' $OUT/c-$t-$r.log | awk '{print $1, $6}' | tr '\n' ' ')"; done; done > $OUT/summary.txt
