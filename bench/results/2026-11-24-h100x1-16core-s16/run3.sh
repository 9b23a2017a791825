#!/bin/bash
# Session 16, device call 3 (nvidia-h100-x1, 16 cores). Builds: b (pace on
# the wall-clock grid, 5194637; the learner's cold samples) and c
# (8b71a90: b plus warm samples, pace's clock read every few calls, the
# Go clearance's direct fused call). Issue 17: gocall's bare Go loops (b
# against c, alternating) and its C twin with c's libdpml.so; dpmlbench
# (Go, b and c) against dpmlbench-c (c). Issue 16: the C client on 1x16
# back to back, b's and c's libdpml.so alternating, 4 B-64 KiB, 20000
# tuning calls; then c alone: skew and barrier on 1x16, b2b on 4x4
# (dpmlrun's emulated nodes), 4 B-64 MiB b2b on 1x16.
. $(dirname $0)/common.sh
SZ=4,16,64,256,1024
for r in 1 2 3; do for b in b c; do
  run gocall-$b-$r 60 $ONE .devbin/$b/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label $b-$r -header
done; done
for r in 1 2; do run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/c/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header; done
run gocall-c-1 60 $ONE $GC -variants c -sizes $SZ -label c-1 -header
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet -variants native,auto"
for r in 1 2; do
  run c-c-1x16-b2bgo-$r 40 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/c/libdpml.so $C $SM -out $OUT/c-c-1x16-b2bgo-$r
  for b in b c; do run go$b-1x16-b2bgo-$r 40 $ONE -x DPML_VERBOSE=1 .devbin/$b/dpmlbench run $SM -plots=false -out $OUT/go$b-1x16-b2bgo-$r; done
done
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
for r in 1 2 3; do for b in b c; do one $b 1x16 b2b $r 60 $S; done; done
one c 1x16 skew 1 60 $S
one c 1x16 barrier 1 60 $S
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=4"
for r in 1 2; do one c 4x4 b2b $r 90 -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V4; done
one c 1x16 b2b full 150 -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,dpml:l=8,intra=shm,dpml:l=16,intra=shm
clean
