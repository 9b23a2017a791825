#!/bin/bash
# Session 10, device call 2 (nvidia-h100-x1, 16 cores): the dpmltrace build
# (s10t: the engine time-stamps each step of a call, DPML_TRACE) under the
# C client dpmlbench-c with libdpml.so preloaded, 1x16 b2b, one variant and
# one size per run so that every traced call is the same plan:
#  A. tree r=4 at 8, 64, 256 B and tree r=16 at 8 B, traced, 2 runs each,
#     and the untraced s9 build in the same call (its periods say how much
#     the trace itself adds).
#  B. the Go client (bench/diag/gocall go-dpml, DPML_INTRA=tree), traced, 8 B.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; echo "s9: $(cat .devbin/s9/COMMIT)"; echo "s10t: $(cat .devbin/s10t/COMMIT)"; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
one() { # one BUILD SIZE VARIANT TAG
  local lib=$1 size=$2 v=$3 tag=$4 name=c-$1-$2-$4
  local tr=""; [ $lib = s10t ] && { mkdir -p $OUT/$name; tr="-x DPML_TRACE=$OUT/$name/trace-%r.csv"; }
  log "$ONE $tr -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern b2b -sizes $size -time 200ms -max-iters 8000 -quiet -variants $v -out $OUT/$name"
  timeout 60 $ONE $tr -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern b2b -sizes $size -time 200ms -max-iters 8000 -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2; do
  for lib in s10t s9; do
    one $lib 8 dpml:intra=tree,r=4 r4-$r
    one $lib 64 dpml:intra=tree,r=4 r4-$r
    one $lib 256 dpml:intra=tree,r=4 r4-$r
    one $lib 8 dpml:intra=tree,r=16 r16-$r
  done
done
mkdir -p $OUT/go-s10t-8
log "$ONE -x DPML_TRACE=$OUT/go-s10t-8/trace-%r.csv -x DPML_INTRA=tree -x DPML_TUNER=static .devbin/s10t/gocall -sizes 8 -variants go-dpml -reps 1 -max-iters 8000"
timeout 60 $ONE -x DPML_TRACE=$OUT/go-s10t-8/trace-%r.csv -x DPML_INTRA=tree -x DPML_TUNER=static .devbin/s10t/gocall -sizes 8 -variants go-dpml -reps 1 -max-iters 8000 > $OUT/go-s10t-8.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
for d in $OUT/c-s10t-* $OUT/go-s10t-8; do python3 bench/diag/trace.py $d; done > $OUT/trace.txt 2>&1
grep -h "^ *8 \|^ *64 \|^ *256 " $OUT/c-*.log > /dev/null
