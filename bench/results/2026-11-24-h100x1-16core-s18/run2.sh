#!/bin/bash
# Session 18, device call 2 (nvidia-h100-x1, 16 cores). Issue 17 at every
# size: dpmlbench (Go, m = d1391f6) against dpmlbench-c2 with m's
# libdpml.so, 1x16 b2b native,auto, 4 B-64 KiB with 20000 tuning calls
# (3 runs each, alternating), 256 KiB-64 MiB with 300 (3 runs each,
# alternating); gocall bare loops again (m, C twin with and without
# libdpml.so), 3 rounds.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SZ=4,16,64,256,1024,4096
for r in 1 2 3; do
  run gocall-m-$r 60 $ONE .devbin/m/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label m-$r -header
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/m/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
done
SM="-pattern b2b -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
SL="-pattern b2b -sizes 256K,1M,4M,16M,64M -time 100ms -max-iters 15000 -tune-calls 300 -check -quiet -variants native,auto"
for r in 1 2 3; do
  run c-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/m/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  run gom-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 .devbin/m/dpmlbench run $SM -plots=false -out $OUT/gom-1x16-b2bgo-$r
done
for r in 1 2 3; do
  run c-1x16L-b2bgo-$r 100 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/m/libdpml.so $C $SL -out $OUT/c-1x16L-b2bgo-$r
  run gom-1x16L-b2bgo-$r 100 $ONE -x DPML_VERBOSE=1 .devbin/m/dpmlbench run $SL -plots=false -out $OUT/gom-1x16L-b2bgo-$r
done
clean
