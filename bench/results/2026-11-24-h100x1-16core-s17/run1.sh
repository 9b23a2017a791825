#!/bin/bash
# Session 17, device call 1 (nvidia-h100-x1, 16 cores). Issue 16: build g
# (41d93ae: the C layer runs and times the confirmation's blocks) against
# f (595f230, session 16's final code). The C client with libdpml.so:
# 1x16 b2b, 4 B-64 KiB, 20000 tuning calls, f and g alternating, 6 runs
# each; g under skew and barrier (2 runs each); 4x4 b2b f and g
# alternating (3 each); g 4 B-64 MiB b2b; g's 100,000-call switch counts
# (b2b, skew).
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
for r in 1 2 3 4 5 6; do for b in f g; do one $b 1x16 b2b $r 60 $S; done; done
for r in 1 2; do one g 1x16 skew $r 60 $S; one g 1x16 barrier $r 60 $S; done
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=4"
for r in 1 2 3; do for b in f g; do one $b 4x4 b2b $r 90 -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V4; done; done
for p in b2b skew; do
  run c-g-1x16-$p-long 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/g/libdpml.so $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-g-1x16-$p-long
done
one g 1x16 b2b full 150 -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,dpml:l=8,intra=shm,dpml:l=16,intra=shm
clean
