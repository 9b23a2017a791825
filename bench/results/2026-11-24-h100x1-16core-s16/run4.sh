#!/bin/bash
# Session 16, device call 4 (nvidia-h100-x1, 16 cores), build c (8b71a90).
# Issue 17 with fixed plans, so that the learner's choices and episodes
# stay out of the Go-against-C ratio: DPML_TUNER=static with the tree of
# radix 8 (DPML_INTRA=tree, DPML_TREE_RADIX=8).
# dpmlbench (Go, dpml.Allreduce) against dpmlbench-c (C, libdpml.so),
# 3 runs each, alternating, b2b with per-call times (the measurement
# issue's pattern) and without; gocall's bare loops, Go against its C
# twin with libdpml.so, 2 runs each.
. $(dirname $0)/common.sh
L=$PWD/.devbin/c/libdpml.so; G=.devbin/c/dpmlbench
FX="-x DPML_TUNER=static -x DPML_INTRA=tree -x DPML_TREE_RADIX=8"
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet -variants native,auto"
for r in 1 2 3; do for pc in true false; do
  run c-1x16-pc$pc-$r 40 $ONE $FX -x LD_PRELOAD=$L $C $SM -percall=$pc -out $OUT/c-1x16-pc$pc-$r
  run go-1x16-pc$pc-$r 40 $ONE $FX $G run $SM -percall=$pc -plots=false -out $OUT/go-1x16-pc$pc-$r
done; done
SZ=4,16,64,256,1024
for r in 1 2; do
  run gocall-go-$r 60 $ONE $FX .devbin/c/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label go-$r -header
  run gocall-cdpml-$r 60 $ONE $FX -x LD_PRELOAD=$L $GC -variants c -sizes $SZ -label cdpml-$r -header
done
run gocall-c-1 60 $ONE $GC -variants c -sizes $SZ -label c-1 -header
clean
