#!/bin/bash
# Session 18, device call 4 (nvidia-h100-x1, 16 cores). Issue 16 with build
# n (2fd3ee2; its C path is session 17's final one, j = 13e38ec): the C
# client dpmlbench-c2 with libdpml.so, auto against fixed plans and the MPI
# library, 4 B-64 KiB, 20000 tuning calls; 1x16 b2b, barrier and skew
# (-run 100) 3 runs each; 4x4 (dpmlrun) b2b, barrier, skew 2 runs each.
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
for r in 1 2 3; do for p in b2b barrier skew; do one n 1x16 $p $r 60 $S; done; done
for r in 1 2; do for p in b2b barrier skew; do one n 4x4 $p $r 90 $S4; done; done
clean
