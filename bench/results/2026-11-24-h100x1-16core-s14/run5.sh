#!/bin/bash
# Session 14, device call 5 (nvidia-h100-x1, 16 cores; nvidia-h200-x2 was
# lent for two calls, then withdrawn). Builds: s14f (9145207) and s14t
# (b1dcddf: on one node the learner's tree arms stop at 1 KiB). C client
# dpmlbench-c, libdpml.so preloaded, 1x16 b2b: 4 B-64 MiB with 1000
# tuning calls, one run per build; 4 B-64 KiB with 10000, 2 runs of s14t.
# Go callers (issue 17): bench/diag/gocall.sh 1x16 and 4x4, 3 rounds; and
# dpml.Allreduce from Go with the tuner on (go-dpml, 2 runs).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in s14f s14t; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
S="-sizes 4,8,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 10000"
one() { # one BUILD PATTERN TAG TIMEOUT VARIANTS ARGS...
  local lib=$1 pat=$2 tag=$3 to=$4 v=$5; shift 5
  [ $(left) -lt $((to / 2)) ] && { echo "skipped $lib $pat $tag" >> $OUT/commands.txt; return; }
  local name=c-$lib-1x16-$pat-$tag
  log "$ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
  timeout $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for b in s14t s14f; do one $b b2b full 120 native,auto,dpml:intra=tree,dpml:l=8,intra=shm,dpml:l=16,intra=shm -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000; done
for r in 1 2; do one s14t b2b $r 60 $V $S; done
mkdir -p /tmp/gbin && cp .devbin/s14t/gocall .devbin/s14t/gocall-c .devbin/s9/dpmlrun /tmp/gbin/
ROUNDS=3 DEADLINE=150 bash bench/diag/gocall.sh $OUT/gocall /tmp/gbin "1x16 4x4" > $OUT/gocall.out 2>&1
for r in 1 2; do
  [ $(left) -lt 20 ] && break
  log "$ONE .devbin/s14t/gocall -variants go-dpml -sizes 4,8,64,256,1024,4096,8192 -settle calls:50ms -label auto-$r"
  timeout 60 $ONE .devbin/s14t/gocall -variants go-dpml -sizes 4,8,64,256,1024,4096,8192 -settle calls:50ms -label auto-$r -header > $OUT/gocall-dpml-$r.csv 2> $OUT/gocall-dpml-$r.log
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done
