#!/bin/bash
# Session 18, the 32-core call (nvidia-h200-x2: 32 cores, one socket, Open
# MPI 4.1.6), not run in session 17 or 18 (the kind was not lent). Build q
# (e025490: session 17's final code plus the binding without cgo's
# per-call checks and Pace gated by the time stamp counter): libdpml.so,
# dpmlbench, gocall in .devbin/q. Issue 16: the C client dpmlbench-c2 with libdpml.so,
# auto against fixed plans and the MPI library, 1x32 (mpirun -np 32
# --bind-to core) and 4x8 (dpmlrun -nodes 4 -ppn 8 -cores-per-node 8):
# b2b 4 B-64 KiB (20000 tuning calls), barrier and skew (-run 100),
# 100,000-call switch counts, 4 B-64 MiB b2b. Issue 17: gocall (Go and its
# C twin) 4 B-4 KiB, dpmlbench against dpmlbench-c2 on 1x32 and 4x8.
. $(dirname $0)/common.sh
L=$PWD/.devbin/q/libdpml.so
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm,dpml:l=32,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=4,intra=tree,r=4"
S4="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V4"
one() { # one LAYOUT PATTERN TAG TIMEOUT ARGS...
  local lay=$1 pat=$2 tag=$3 to=$4; shift 4
  local name=c-q-$lay-$pat-$tag
  if [ $lay = 1x32 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to .devbin/c/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8 -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
SZ=4,16,64,256,1024,4096
run gocall-q-1 60 $ONE .devbin/q/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label q-1 -header
run gocall-cdpml-1 60 $ONE -x LD_PRELOAD=$L $GC -variants c -sizes $SZ -label cdpml-1 -header
run gocall-c-1 60 $ONE $GC -variants c -sizes $SZ -label c-1 -header
for r in 1 2 3; do one 1x32 b2b $r 60 $S; done
for r in 1 2; do one 1x32 barrier $r 60 $S; one 1x32 skew $r 60 $S; done
for r in 1 2; do one 4x8 b2b $r 90 $S4; done
one 4x8 barrier 1 90 $S4
one 4x8 skew 1 90 $S4
for p in b2b skew; do
  run c-q-1x32-$p-long 100 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-q-1x32-$p-long
done
SM="-pattern b2b -sizes 4,16,64,256,1K,4K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants native,auto"
run c-1x32-b2bgo-1 50 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $SM -out $OUT/c-1x32-b2bgo-1
run go-1x32-b2bgo-1 50 $ONE -x DPML_VERBOSE=1 .devbin/q/dpmlbench run $SM -plots=false -out $OUT/go-1x32-b2bgo-1
R8=".devbin/c/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"
run c-4x8-b2bgo-1 90 $R8 -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C $SM -out $OUT/c-4x8-b2bgo-1
run go-4x8-b2bgo-1 90 $R8 -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- .devbin/q/dpmlbench run $SM -plots=false -out $OUT/go-4x8-b2bgo-1
one 1x32 b2b full 120 -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,dpml:l=16,intra=shm,dpml:l=32,intra=shm
clean
