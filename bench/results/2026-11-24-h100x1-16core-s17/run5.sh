#!/bin/bash
# Session 17, device call 5 (nvidia-h100-x1, 16 cores). Diagnosis of auto's
# tail at 16 B (build j): the C client, 1x16 b2b, 16 B only, auto against
# tree r=16 (and native), 20000 tuning calls, GODEBUG=gctrace=1 (a line per
# Go GC cycle); 10 batches per point (the default) and 1 batch, 3 runs each.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
L=$PWD/.devbin/j/libdpml.so
S="-sizes 16 -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto,dpml:intra=tree,r=16"
for r in 1 2 3; do
  run c-j-1x16-b2b-b10g$r 60 $ONE -x DPML_VERBOSE=1 -x GODEBUG=gctrace=1 -x LD_PRELOAD=$L $C -pattern b2b $S -out $OUT/c-j-1x16-b2b-b10g$r
  run c-j-1x16-b2b-b1g$r 60 $ONE -x DPML_VERBOSE=1 -x GODEBUG=gctrace=1 -x LD_PRELOAD=$L $C -pattern b2b $S -batches 1 -out $OUT/c-j-1x16-b2b-b1g$r
done
clean
