#!/bin/bash
# Session 17, device call 3 (nvidia-h100-x1, 16 cores). Build i (aadf84b:
# h plus a Go caller's confirmation blocks on the Go clearance). Issue 17:
# gocall's bare loops (Go, i) and its C twin with i's libdpml.so and
# without; dpmlbench (Go, i) against dpmlbench-c2 with i's libdpml.so, b2b
# 4 B-1 KiB, 20000 tuning calls (the keys confirm), 3 runs each,
# alternating. Issue 16: the C client, b2b h and i alternating (3 each),
# i under barrier and skew on 1x16 and 4x4 (1 each).
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SZ=4,16,64,256,1024
for r in 1 2 3; do
  run gocall-i-$r 60 $ONE .devbin/i/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label i-$r -header
  [ $r -lt 3 ] && run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/i/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header
done
run gocall-c-1 60 $ONE $GC -variants c -sizes $SZ -label c-1 -header
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3; do
  run c-1x16-b2bgo-$r 50 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/i/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  run go-1x16-b2bgo-$r 50 $ONE -x DPML_VERBOSE=1 .devbin/i/dpmlbench run $SM -plots=false -out $OUT/go-1x16-b2bgo-$r
done
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
for r in 5 6 7; do for b in h i; do one $b 1x16 b2b $r 60 $S; done; done
one i 1x16 barrier 3 60 $S
one i 1x16 skew 3 60 $S
one i 4x4 barrier 2 90 $S4
one i 4x4 skew 2 90 $S4
clean
