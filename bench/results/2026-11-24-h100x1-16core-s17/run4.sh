#!/bin/bash
# Session 17, device call 4 (nvidia-h100-x1, 16 cores). Build j (13e38ec:
# i plus the period stride at the confirmation's freeze) against i
# (aadf84b). The C client dpmlbench-c2 with libdpml.so: 1x16 b2b, i and j
# alternating, 5 runs each; j under barrier and skew (-run 100, 2 each);
# 4x4 b2b i and j alternating (2 each); j's 100,000-call switch counts
# (b2b, skew). Issue 17: dpmlbench (Go, j) against dpmlbench-c2 with j's
# libdpml.so, b2b 4 B-1 KiB, 20000 tuning calls, 3 runs each, alternating.
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
for r in 1 2 3 4 5; do for b in i j; do one $b 1x16 b2b $r 60 $S; done; done
for r in 1 2; do one j 1x16 barrier $r 60 $S; one j 1x16 skew $r 60 $S; done
for r in 1 2; do for b in i j; do one $b 4x4 b2b $r 90 $S4; done; done
for p in b2b skew; do
  run c-j-1x16-$p-long 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/j/libdpml.so $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-j-1x16-$p-long
done
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3; do
  run c-1x16-b2bgo-$r 50 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/j/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  run go-1x16-b2bgo-$r 50 $ONE -x DPML_VERBOSE=1 .devbin/j/dpmlbench run $SM -plots=false -out $OUT/go-1x16-b2bgo-$r
done
clean
