#!/bin/bash
# Session 17, device call 2 (nvidia-h100-x1, 16 cores). Issue 16: build h
# (27d73c7: g less the return stamp, DPML_VERBOSE=1's report without a
# string per call) against g (41d93ae), with the client's -run (default
# 100 consecutive calls of a variant per round under barrier and skew;
# dpmlbench-c2 = dpmlbench-c at 27d73c7). 1x16 b2b g and h alternating (4
# each); h under barrier and skew (2 runs each, -run 100; 1 run each with
# -run 1, the old method); 4x4 b2b (3), barrier and skew (1 each); h's
# 100,000-call switch counts (b2b, skew); h 4 B-64 MiB b2b.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=4"
S4="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V4"
one() { # one BUILD LAYOUT PATTERN TAG TIMEOUT ARGS...
  local b=$1 lay=$2 pat=$3 tag=$4 to=$5; shift 5
  local name=c-$b-$lay-$pat-$tag L=$PWD/.devbin/$b/libdpml.so
  if [ $lay = 1x16 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to .devbin/c/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
for r in 1 2 3 4; do for b in g h; do one $b 1x16 b2b $r 60 $S; done; done
for r in 1 2; do one h 1x16 barrier $r 60 $S; one h 1x16 skew $r 60 $S; done
one h 1x16 barrier run1 60 $S -run 1
one h 1x16 skew run1 60 $S -run 1
for r in 1 2 3; do one h 4x4 b2b $r 90 $S4; done
one h 4x4 barrier 1 90 $S4
one h 4x4 skew 1 90 $S4
for p in b2b skew; do
  run c-h-1x16-$p-long 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/h/libdpml.so $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-h-1x16-$p-long
done
one h 1x16 b2b full 150 -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,dpml:l=8,intra=shm,dpml:l=16,intra=shm
clean
