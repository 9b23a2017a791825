#!/bin/bash
# Session 18, device call 5 (nvidia-h100-x1, 16 cores). Issue 17 with the
# final build n (2fd3ee2; bc15e6a after it changes only Comm.Handle and a
# comment): dpmlbench (Go) against dpmlbench-c2 with n's libdpml.so, 1x16
# b2b native,auto 4 B-64 KiB, 20000 tuning calls, 5 runs each
# alternating; gocall bare loops (go, go-dpml) against the C twin with
# and without libdpml.so, 4 B-4 KiB, 3 rounds.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SZ=4,16,64,256,1024,4096
for r in 1 2 3; do
  run gocall-n-$r 60 $ONE .devbin/n/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label n-$r -header
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/n/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
done
SM="-pattern b2b -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3 4 5; do
  run c-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/n/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  run gon-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 .devbin/n/dpmlbench run $SM -plots=false -out $OUT/gon-1x16-b2bgo-$r
done
clean
