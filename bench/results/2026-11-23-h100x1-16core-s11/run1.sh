#!/bin/bash
# Session 11, device call 1 (nvidia-h100-x1, 16 cores): what the tuner's cost
# rules read per call, for fixed plans, against what the program pays.
#  A. the dpmltrace build (s11t) under the C client, 1x16, one plan and one
#     size per run (tree r=4/8/16, copies l=1/4/16 at 8, 64, 256 B, 1 KiB),
#     b2b and skew (S = 20 us); bench/diag/spans.py turns each run's trace
#     files into one CSV of per-call costs (second, last, penult, skew,
#     period), gzipped.
#  B. the untraced build of the same engine (s10v) with every variant in one
#     run, b2b, and auto with DPML_VERBOSE=1 (what the learner measured).
OUT=$1; mkdir -p $OUT/spans
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in s10v s11t; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
tr() { # tr PATTERN SIZE VARIANT TAG
  local pat=$1 size=$2 v=$3 tag=$4 name=$1-$2-$4
  [ $(left) -lt 60 ] && { echo "skipped $name" >> $OUT/commands.txt; return; }
  mkdir -p /tmp/tr/$name
  log "$ONE -x DPML_TRACE=/tmp/tr/$name/trace-%r.csv -x LD_PRELOAD=.devbin/s11t/libdpml.so $C -pattern $pat -sizes $size -time 200ms -max-iters 8000 -quiet -variants $v -out $OUT/$name"
  timeout 60 $ONE -x DPML_TRACE=/tmp/tr/$name/trace-%r.csv -x LD_PRELOAD=$PWD/.devbin/s11t/libdpml.so $C -pattern $pat -sizes $size -time 200ms -max-iters 8000 -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
  python3 bench/diag/spans.py /tmp/tr/$name $OUT/spans/$name.csv >> $OUT/spans.txt 2>&1
  rm -rf /tmp/tr/$name
}
for rep in 1 2; do
  for pat in b2b skew; do
    for size in 8 64 256 1K; do
      for v in t4:dpml:intra=tree,r=4 t8:dpml:intra=tree,r=8 t16:dpml:intra=tree,r=16 s1:dpml:l=1,intra=shm s4:dpml:l=4,intra=shm s16:dpml:l=16,intra=shm; do
        tr $pat $size ${v#*:} ${v%%:*}-$rep
      done
    done
  done
  V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
  name=untraced-b2b-$rep
  log "$ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=.devbin/s10v/libdpml.so $C -pattern b2b -sizes 8,64,256,1K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/$name"
  timeout 90 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/s10v/libdpml.so $C -pattern b2b -sizes 8,64,256,1K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done
gzip -9 $OUT/spans/*.csv
