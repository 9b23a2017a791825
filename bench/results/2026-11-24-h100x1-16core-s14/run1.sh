#!/bin/bash
# Session 14, device call 1 (nvidia-h100-x1, 16 cores; nvidia-h200-x2 not
# lent). Where does auto lose its 7-9% to the best fixed plan at 64 B-4 KiB
# (session 13: same arm, same per-call median, a p99 of 10-19 us against
# 2.4-5 us)? Builds: s14 (4f2db27, HEAD), and two diagnostic builds not
# committed: d1 (settled keys time one call in 4096, up to 65536: they
# enter Go and commit far less often), d3 (no re-exploration after the
# first settle: ConfirmCalls -1, Drift 1000). C client dpmlbench-c with
# libdpml.so preloaded, 1x16 b2b, 3 runs per build interleaved; skew 1 run.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
B="s14 d1 d3"
{ date -u; nproc; lscpu | head -20; for d in $B; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
S="-sizes 8,64,256,1K,4K,16K -time 100ms -max-iters 15000 -tune-calls 10000"
one() { # one BUILD PATTERN TAG VARIANTS ARGS...
  local lib=$1 pat=$2 tag=$3 v=$4; shift 4
  [ $(left) -lt 40 ] && { echo "skipped $lib $pat $tag" >> $OUT/commands.txt; return; }
  local name=c-$lib-1x16-$pat-$tag
  log "$ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
  timeout 80 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2 3; do for lib in $B; do one $lib b2b $r $V $S; done; done
for lib in s14 d1; do one $lib skew 1 $V $S; done
for r in 4 5; do for lib in $B; do one $lib b2b $r $V $S; done; done
