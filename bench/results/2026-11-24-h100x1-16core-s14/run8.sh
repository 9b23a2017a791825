#!/bin/bash
# Session 14, device call 8 (nvidia-h100-x1, 16 cores). Builds: s14r
# (7fdc830: the stride floor, tree arms to 1 KiB on one node) and s14w
# (s14r plus a time bound on the stride: MaxStride 4096 and a drift window
# of at most about 1 s of the key's calls, so a settled small key comes
# back to Go once per 4096 calls instead of 256). bench/diag/series with
# ALT=1500 (as run6) at 1 KiB and 64 B: auto of both builds and the fixed
# tree r=4, 3 runs each; then the C client dpmlbench-c 1x16 b2b, 3 runs
# per build interleaved, skew 1 run per build, and a 100,000-call b2b run
# of s14w (switch counts).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((500 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | head -20; for d in s14r s14w; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
ser() { # ser TAG BYTES LIB ENV...
  local tag=$1 b=$2 lib=$3; shift 3
  [ $(left) -lt 20 ] && return
  local xs="-x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so"; for e in "$@"; do xs="$xs -x $e"; done
  log "$ONE $xs .devbin/series/series $b 30000 6000 1500"
  { echo "== $tag $b"; timeout 60 $ONE $xs .devbin/series/series $b 30000 6000 1500; } >> $OUT/series.txt 2>&1
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
  ser auto-s14w $b s14w
  ser tree4 $b s14r DPML_INTRA=tree DPML_TREE_RADIX=4
done; done
for r in 1 2 3; do for b in s14r s14w; do one $b b2b $r 60 $V $S; done; done
for b in s14r s14w; do one $b skew 1 60 $V $S; done
one s14w b2b long 60 native,auto -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000
