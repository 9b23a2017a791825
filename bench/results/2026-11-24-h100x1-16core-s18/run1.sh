#!/bin/bash
# Session 18, device call 1 (nvidia-h100-x1, 16 cores). Issue 17: the
# blocking calls without cgo's per-call pointer checks. Builds: o =
# 6bb2881 (session 17's final) with this session's gocall clock probe;
# m = d1391f6 (no checks). A. gocall clock (ns per call of the binding on
# MPI_COMM_SELF), o and m alternating, 3 each. B. gocall bare loops
# 4 B-4 KiB (go, go-dpml) o and m, the C twin with m's libdpml.so and
# without, 3 rounds. C. dpmlbench (Go, o and m) against dpmlbench-c2
# with m's libdpml.so, 1x16 b2b 4 B-4 KiB native,auto, 20000 tuning calls,
# 5 rounds alternating. D. the same on 4x4 (dpmlrun), 3 rounds.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SZ=4,16,64,256,1024,4096
for r in 1 2 3; do for b in o m; do
  run clock-$b-$r 30 $ONE .devbin/$b/gocall clock
done; done
for r in 1 2 3; do
  for b in o m; do run gocall-$b-$r 60 $ONE .devbin/$b/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label $b-$r -header; done
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/m/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
done
SM="-pattern b2b -sizes 4,16,64,256,1K,4K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3 4 5; do
  run c-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/m/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  for b in o m; do run go$b-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 .devbin/$b/dpmlbench run $SM -plots=false -out $OUT/go$b-1x16-b2bgo-$r; done
done
R4=".devbin/c/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4"
for r in 1 2 3; do
  run c-4x4-b2bgo-$r 90 $R4 -preload $PWD/.devbin/m/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C $SM -out $OUT/c-4x4-b2bgo-$r
  for b in o m; do run go$b-4x4-b2bgo-$r 90 $R4 -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- .devbin/$b/dpmlbench run $SM -plots=false -out $OUT/go$b-4x4-b2bgo-$r; done
done
clean
