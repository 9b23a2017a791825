#!/bin/bash
# Session 18, device call 6 (nvidia-h100-x1, 16 cores). A prototype (build
# p: bc15e6a plus dpml/gotree.go, uncommitted): a Go caller's cleared
# fused-tree calls run the tree in Go (DPML_GOTREE=1) instead of the C
# routine through cgo (0). gocall go-dpml and dpmlbench (Go) with 0 and 1
# alternating against the C loops with p's libdpml.so, 1x16 b2b.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SZ=4,16,64,256,1024
for r in 1 2 3; do
  for m in 0 1; do run gocall-gt$m-$r 60 $ONE -x DPML_GOTREE=$m .devbin/p/gocall -variants go-dpml -sizes $SZ -settle calls:50ms -label gt$m-$r -header; done
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/p/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header
done
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3 4; do
  run c-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/p/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  for m in 0 1; do run gt$m-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x DPML_GOTREE=$m .devbin/p/dpmlbench run $SM -plots=false -out $OUT/gt$m-1x16-b2bgo-$r; done
done
clean
