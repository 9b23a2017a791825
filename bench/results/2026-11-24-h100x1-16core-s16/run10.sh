#!/bin/bash
# Session 16, device call 10 (nvidia-h100-x1, 16 cores), build e (9238499;
# gocall from 39d2597, the same library code). Issue 16: 100,000 auto
# calls per size after 1000 tuning calls (8 B, 64 B, 1 KiB, 16 KiB), b2b
# and skew, for the keys' plan switches (DPML_VERBOSE's table). Issue
# 17: gocall's bare Go loops against its C twin with libdpml.so, 3
# launches each, alternating.
. $(dirname $0)/common.sh
L=$PWD/.devbin/e/libdpml.so
for p in b2b skew; do
  run c-e-1x16-$p-long 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $p -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto -out $OUT/c-e-1x16-$p-long
done
SZ=4,16,64,256,1024
for r in 1 2 3; do
  run gocall-e-$r 60 $ONE .devbin/e/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label e-$r -header
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$L $GC -variants c -sizes $SZ -label cdpml-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
done
clean
