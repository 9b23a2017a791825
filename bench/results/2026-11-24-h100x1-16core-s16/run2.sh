#!/bin/bash
# Session 16, device call 2 (nvidia-h100-x1, 16 cores). Builds: a (r1's,
# d142da5), b (a plus pace on a wall-clock grid: every rank of a node
# yields in the same 5 ms slot), w (b plus warm samples: a call after
# another arm's is not a sample). Issue 17: gocall's bare Go loops (a
# against b, alternating) and its C twin with b's libdpml.so; dpmlbench
# (Go, a and b) against dpmlbench-c (b). Issue 16: the C client with b's
# and w's libdpml.so, 20000 tuning calls (past the keys' confirmation),
# auto against the fixed plans, alternating.
. $(dirname $0)/common.sh
SZ=4,16,64,256,1024
for r in 1 2 3; do for b in a b; do
  run gocall-$b-$r 60 $ONE .devbin/$b/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label $b-$r -header
done; done
for r in 1 2; do run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/b/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header; done
run gocall-c-1 60 $ONE $GC -variants c -sizes $SZ -label c-1 -header
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet -variants native,auto"
for r in 1 2; do
  run c-b-1x16-b2b-$r 40 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/b/libdpml.so $C $SM -out $OUT/c-b-1x16-b2b-$r
  for b in a b; do run go$b-1x16-b2b-$r 40 $ONE -x DPML_VERBOSE=1 .devbin/$b/dpmlbench run $SM -plots=false -out $OUT/go$b-1x16-b2b-$r; done
done
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
for r in 1 2 3; do for b in b w; do
  run c-$b-1x16-b2b-t$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$b/libdpml.so $C -pattern b2b -sizes 64,256,1K,4K,16K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V -out $OUT/c-$b-1x16-b2b-t$r
done; done
clean
