#!/bin/bash
# Session 14, device call 10 (nvidia-h100-x1, 16 cores). Builds: s14r
# (7fdc830) and s14p (s14r plus Config.SamplePeriod: once a key has
# settled after its scheduled confirmation it records about one call per
# second at its measured call rate, so it comes back to Go about once a
# second). bench/diag/series with ALT=1500 at 1 KiB and 64 B, 40,000
# calls, the first 12,000 left out: auto of both builds and the fixed tree
# r=4, 3 runs each; then the C client dpmlbench-c 1x16 b2b, 3 runs per
# build interleaved, skew 1 run per build, and a 100,000-call b2b run of
# s14p (switch counts).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((500 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | head -20; for d in s14r s14p; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
ser() { # ser TAG BYTES LIB ENV...
  local tag=$1 b=$2 lib=$3; shift 3
  [ $(left) -lt 20 ] && return
  local xs="-x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so -x DPML_VERBOSE=1"; for e in "$@"; do xs="$xs -x $e"; done
  log "$ONE $xs .devbin/series/series $b 40000 12000 1500"
  { echo "== $tag $b"; timeout 60 $ONE $xs .devbin/series/series $b 40000 12000 1500 2>&1 | grep -v "^libdpml:   DPML_"; } >> $OUT/series.txt 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
C=.devbin/base/dpmlbench-c
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
for r in 1 2 3; do for b in 1024 64; do
  ser auto-s14r $b s14r
  ser auto-s14p $b s14p
  ser tree4 $b s14r DPML_INTRA=tree DPML_TREE_RADIX=4
done; done
for r in 1 2 3; do for b in s14r s14p; do one $b b2b $r 60 $V $S; done; done
for b in s14r s14p; do one $b skew 1 60 $V $S; done
one s14p b2b long 60 native,auto -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000
