#!/bin/bash
# Session 20, device call 2 (nvidia-h200-x2, 32 cores), build r as in
# run1.sh. run1.sh's Go-against-C runs over 4 B-64 MiB ran past their 60 s
# limit (20000 tuning calls at every size up to 64 MiB: a mistake in the
# script) and took most of that call; this call splits them: 4 B-4 KiB with
# 20000 tuning calls, 16 KiB-64 MiB with 200. Then issue 16's runs that
# call 1 did not reach.
. $(dirname $0)/../2026-11-24-h200x2-s18/common.sh
L=$PWD/.devbin/r/libdpml.so
R8=".devbin/c/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
# Issue 17: dpmlbench (Go) against dpmlbench-c2 + libdpml.so, b2b, native
# and auto interleaved; launches alternate C, Go.
SM="-pattern b2b -sizes 4,16,64,256,1K,4K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants native,auto"
BG="-pattern b2b -sizes 16K:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 200 -check -quiet -variants native,auto"
gc1() { # gc1 TAG TIMEOUT ARGS...: C then Go on 1x32
  local t=$1 to=$2; shift 2
  run c-1x32-$t $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C "$@" -out $OUT/c-1x32-$t
  run go-1x32-$t $to $ONE -x DPML_VERBOSE=1 .devbin/r/dpmlbench run "$@" -plots=false -out $OUT/go-1x32-$t
}
gc8() { # gc8 TAG TIMEOUT ARGS...: C then Go on 4x8
  local t=$1 to=$2; shift 2
  run c-4x8-$t $to $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C "$@" -out $OUT/c-4x8-$t
  run go-4x8-$t $to $R8 -- $R8A -x DPML_VERBOSE=1 -- .devbin/r/dpmlbench run "$@" -plots=false -out $OUT/go-4x8-$t
}
gc1 b2bgo-1 40 $SM; gc1 b2bgo-2 40 $SM
gc8 b2bgo-1 50 $SM; gc8 b2bgo-2 50 $SM
gc1 b2bbig-1 60 $BG
gc8 b2bbig-1 80 $BG
# Issue 16 (as run1.sh).
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm,dpml:l=32,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=4,intra=tree,r=4"
S4="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V4"
one() { # one LAYOUT PATTERN TAG TIMEOUT ARGS...
  local lay=$1 pat=$2 tag=$3 to=$4; shift 4
  local name=c-r-$lay-$pat-$tag
  if [ $lay = 1x32 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
for r in 1 2; do for p in b2b barrier skew; do one 4x8 $p $r 60 $S4; done; done
for r in 1 2; do one 1x32 skew $r 50 $S; done
for p in b2b skew; do
  run c-r-1x32-$p-long 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-r-1x32-$p-long
done
for r in 2 3; do one 1x32 b2b $r 30 $S; done
one 1x32 barrier 2 30 $S
one 1x32 b2b big 90 -sizes 256K:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 300 -check -quiet -variants native,auto,dpml:l=16,intra=shm,dpml:l=32,intra=shm
clean
