#!/bin/bash
# Session 16, device call 11 (nvidia-h100-x1, 16 cores). Issue 16: builds
# e (9238499: confirmation blocks less the later calls' way into Go) and
# f (595f230: less their way back out of Go too). The C client, 1x16 b2b,
# 4 B-64 KiB, 20000 tuning calls, e and f alternating, 4 runs each; then
# f alone: skew, barrier, 4x4 b2b (2 runs), 4 B-64 MiB b2b.
. $(dirname $0)/common.sh
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V"
one() { # one BUILD LAYOUT PATTERN TAG TIMEOUT ARGS...
  local b=$1 lay=$2 pat=$3 tag=$4 to=$5; shift 5
  local name=c-$b-$lay-$pat-$tag L=$PWD/.devbin/$b/libdpml.so
  if [ $lay = 1x16 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to .devbin/c/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
for r in 1 2 3 4; do for b in e f; do one $b 1x16 b2b $r 60 $S; done; done
one f 1x16 skew 1 60 $S
one f 1x16 barrier 1 60 $S
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=4"
for r in 1 2; do one f 4x4 b2b $r 90 -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V4; done
one f 1x16 b2b full 150 -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,dpml:l=8,intra=shm,dpml:l=16,intra=shm
clean
