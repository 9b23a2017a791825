#!/bin/bash
# Session 14, device call 3 (nvidia-h100-x1, 16 cores). Where do auto's
# slow calls fall? bench/diag/series (C, back to back, every call timed,
# the slowest rank's time per call) at 64 B and 1 KiB, 40,000 calls, the
# first 12,000 left out: the MPI library alone, s14f with the fixed tree
# r=4 (DPML_INTRA=tree DPML_TREE_RADIX=4), s14f auto, s14 auto, s14f
# DPML_TUNER=model; 2 runs each, interleaved. Then dpmlbench-c with two
# variants only (auto, tree r=4; and native), 2 runs per build.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | head -20; for d in s14 s14f; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
ser() { # ser TAG BYTES LIB ENV...
  local tag=$1 b=$2 lib=$3; shift 3
  [ $(left) -lt 30 ] && { echo "skipped $tag $b" >> $OUT/commands.txt; return; }
  local xs=""; [ $lib != none ] && xs="-x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so"
  for e in "$@"; do xs="$xs -x $e"; done
  log "$ONE $xs .devbin/series/series $b 40000 12000"
  { echo "== $tag $b"; timeout 60 $ONE $xs .devbin/series/series $b 40000 12000; } >> $OUT/series.txt 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2; do for b in 64 1024; do
  ser native $b none
  ser tree4 $b s14f DPML_INTRA=tree DPML_TREE_RADIX=4
  ser auto-s14f $b s14f
  ser auto-s14 $b s14
  ser model $b s14f DPML_TUNER=model
done; done
C=.devbin/base/dpmlbench-c
for r in 1 2; do for lib in s14 s14f; do
  name=c-$lib-1x16-b2b2-$r
  log "$ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern b2b -sizes 8,64,256,1K -time 100ms -max-iters 15000 -tune-calls 10000 -check -quiet -variants native,auto,dpml:intra=tree,r=4 -out $OUT/$name"
  [ $(left) -lt 40 ] && continue
  timeout 80 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern b2b -sizes 8,64,256,1K -time 100ms -max-iters 15000 -tune-calls 10000 -check -quiet -variants native,auto,dpml:intra=tree,r=4 -out $OUT/$name > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done; done
