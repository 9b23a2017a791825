#!/bin/bash
# Session 16, device call 12 (nvidia-h100-x1, 16 cores). Build f (595f230,
# the final code) against c (8b71a90, before the confirmation in blocks):
# the C client, 1x16 b2b, 4 B-64 KiB, 20000 tuning calls, 3 runs each,
# alternating; then f's 100,000-call runs (8 B, 64 B, 1 KiB, 16 KiB, b2b
# and skew) for the keys' plan switches.
. $(dirname $0)/common.sh
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V"
for r in 1 2 3; do for b in c f; do
  run c-$b-1x16-b2b-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$b/libdpml.so $C -pattern b2b $S -out $OUT/c-$b-1x16-b2b-$r
done; done
for p in b2b skew; do
  run c-f-1x16-$p-long 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/f/libdpml.so $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-f-1x16-$p-long
done
clean
