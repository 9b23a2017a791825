#!/bin/bash
# Session 18, device call 8 (a repeat of run7.sh on another instance) (nvidia-h100-x1, 16 cores). Build q (e025490:
# Pace gated by the time stamp counter) against n (2fd3ee2). A. gocall
# clock, 3 launches each alternating. B. gocall bare loops (go, go-dpml)
# n and q, the C twin with q's libdpml.so and without, 3 rounds.
# C. dpmlbench (Go, n and q) against dpmlbench-c2 with q's libdpml.so,
# 1x16 b2b native,auto 4 B-64 KiB, 20000 tuning calls, 5 rounds.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SZ=4,16,64,256,1024,4096
for r in 1 2 3; do for b in n q; do run clock-$b-$r 30 $ONE .devbin/$b/gocall clock; done; done
for r in 1 2 3; do
  for b in n q; do run gocall-$b-$r 60 $ONE .devbin/$b/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label $b-$r -header; done
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$PWD/.devbin/q/libdpml.so $GC -variants c -sizes $SZ -label cdpml-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
done
SM="-pattern b2b -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
for r in 1 2 3 4 5; do
  run c-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/q/libdpml.so $C $SM -out $OUT/c-1x16-b2bgo-$r
  for b in n q; do run go$b-1x16-b2bgo-$r 60 $ONE -x DPML_VERBOSE=1 .devbin/$b/dpmlbench run $SM -plots=false -out $OUT/go$b-1x16-b2bgo-$r; done
done
clean
