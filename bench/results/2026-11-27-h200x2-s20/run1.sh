#!/bin/bash
# Session 20, device call 1: the 32-core kind (nvidia-h200-x2: 32 cores,
# one socket, Open MPI 4.1.6), build r (5ee6b17's code, built at 2ff1aef:
# libdpml.so, dpmlbench, gocall in .devbin/r; the C clients dpmlbench-c2
# and gocall-c in .devbin/base; dpmlrun in .devbin/c, all from the same
# tree). Issue 17 first (cheap), then issue 16. Layouts: 1x32 (mpirun -np
# 32 --bind-to core) and 4x8 (dpmlrun -nodes 4 -ppn 8 -cores-per-node 8).
# Launches of the compared programs alternate.
. $(dirname $0)/../2026-11-24-h200x2-s18/common.sh
L=$PWD/.devbin/r/libdpml.so
R8=".devbin/c/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
SZ=4,16,64,256,1024,4096
# Issue 17 A: gocall bare loops (20,000 b2b calls), Go (mpi.Allreduce,
# dpml.Allreduce) against its C twin (plain, and with libdpml.so).
for r in 1 2 3; do
  run gocall-r-$r 60 $ONE .devbin/r/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label r-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$L $GC -variants c -sizes $SZ -label cdpml-$r -header
done
for r in 1 2; do
  run gocall-r8-$r 60 $R8 -- $R8A -- .devbin/r/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label r8-$r -header
  run gocall-c8-$r 60 $R8 -- $R8A -- $GC -variants c -sizes $SZ -label c8-$r -header
  run gocall-cdpml8-$r 60 $R8 -preload $L -- $R8A -- $GC -variants c -sizes $SZ -label cdpml8-$r -header
done
# Issue 17 B: dpmlbench (Go) against dpmlbench-c2 + libdpml.so, b2b,
# native and auto interleaved, 4 B-64 MiB.
SM="-pattern b2b -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 10000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3; do
  run c-1x32-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $SM -out $OUT/c-1x32-b2bgo-$r
  run go-1x32-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 .devbin/r/dpmlbench run $SM -plots=false -out $OUT/go-1x32-b2bgo-$r
done
for r in 1 2; do
  run c-4x8-b2bgo-$r 90 $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C $SM -out $OUT/c-4x8-b2bgo-$r
  run go-4x8-b2bgo-$r 90 $R8 -- $R8A -x DPML_VERBOSE=1 -- .devbin/r/dpmlbench run $SM -plots=false -out $OUT/go-4x8-b2bgo-$r
done
# Issue 16: the C client with libdpml.so, auto against fixed plans and the
# MPI library, 4 B-64 KiB, 20000 tuning calls; barrier and skew -run 100.
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
for r in 1 2; do for p in b2b barrier skew; do one 1x32 $p $r 60 $S; done; done
for r in 1 2; do for p in b2b barrier skew; do one 4x8 $p $r 90 $S4; done; done
# Large sizes, every pattern, 1x32: 256 KiB-64 MiB.
for p in b2b barrier skew; do
  one 1x32 $p big 120 -sizes 256K:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000 -check -quiet -variants native,auto,dpml:intra=tree,dpml:l=16,intra=shm,dpml:l=32,intra=shm
done
# Switch counts: 100,000 calls of a steady pattern.
for p in b2b skew; do
  run c-r-1x32-$p-long 110 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-r-1x32-$p-long
done
for r in 3; do for p in b2b barrier skew; do one 1x32 $p $r 60 $S; done; done
clean
