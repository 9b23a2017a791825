#!/bin/bash
# Ready for the next 32-core call (nvidia-h200-x2), not run in session 20.
# Build s (cfbaa11; bench/devbin.sh s cfbaa11), carried in .devbin:
#   BUDGET=540 bash bench/results/2026-11-27-h200x2-s20/run4.sh $OUT/s4
# A. Issue 17 at large sizes on 4x8, where s2's single launches read Go/C
#    0.91-2.09 with auto and 1.01-1.73 with the MPI library's own call:
#    dpmlbench (Go) against dpmlbench-c + libdpml.so, b2b, 16 KiB-16 MiB,
#    500 tuning calls, 3 launches each alternating C, Go (about 30 s each).
# B. Issue 16 above 64 KiB: barrier and skew on 1x32, b2b, barrier and
#    skew on 4x8, 256 KiB-64 MiB, auto against fixed plans (one run each).
. $(dirname $0)/../2026-11-24-h200x2-s18/common.sh
C=.devbin/s/dpmlbench-c
L=$PWD/.devbin/s/libdpml.so
R8=".devbin/s/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
BG="-pattern b2b -sizes 16K:16M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 500 -check -quiet -variants native,auto"
for r in 1 2 3; do
  run c-4x8-b2bbig-$r 70 $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C $BG -out $OUT/c-4x8-b2bbig-$r
  run go-4x8-b2bbig-$r 70 $R8 -- $R8A -x DPML_VERBOSE=1 -- .devbin/s/dpmlbench run $BG -plots=false -out $OUT/go-4x8-b2bbig-$r
done
B="-sizes 256K:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 300 -run 10 -check -quiet"
for p in barrier skew; do
  run c-s-1x32-$p-big 90 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $p $B -variants native,auto,dpml:l=16,intra=shm,dpml:l=32,intra=shm -out $OUT/c-s-1x32-$p-big
done
for p in b2b barrier skew; do
  run c-s-4x8-$p-big 100 $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C -pattern $p $B -variants native,auto,dpml:l=4,intra=shm,dpml:l=8,intra=shm,pipelined:l=8,k=4 -out $OUT/c-s-4x8-$p-big
done
clean
