#!/bin/bash
# Session 16, device call 6 (nvidia-h100-x1, 16 cores), build c (8b71a90).
# Issue 17: does the MPI library's batches between auto's make the Go
# benchmark's calls slower than the C client's? Fixed plan (DPML_TUNER=
# static, tree of radix 8), b2b, 4 B-1 KiB, per-call clock reads on (the
# measurement issue's pattern): dpmlbench (Go) and dpmlbench-c (C),
# each with native and auto interleaved and with auto alone, 3 rounds;
# gocall's bare loops once (the machine's state).
. $(dirname $0)/common.sh
L=$PWD/.devbin/c/libdpml.so; G=.devbin/c/dpmlbench
FX="-x DPML_TUNER=static -x DPML_INTRA=tree -x DPML_TREE_RADIX=8"
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -check -quiet"
for r in 1 2 3; do for v in native,auto auto; do t=${v%%,*}
  run c-1x16-$t-$r 40 $ONE $FX -x LD_PRELOAD=$L $C $SM -variants $v -out $OUT/c-1x16-$t-$r
  run go-1x16-$t-$r 40 $ONE $FX $G run $SM -variants $v -plots=false -out $OUT/go-1x16-$t-$r
done; done
run gocall-go-1 60 $ONE $FX .devbin/c/gocall -variants go,go-dpml -sizes 4,16,64,256,1024 -settle calls:50ms -label go-1 -header
run gocall-cdpml-1 60 $ONE $FX -x LD_PRELOAD=$L $GC -variants c -sizes 4,16,64,256,1024 -label cdpml-1 -header
run gocall-c-1 60 $ONE $GC -variants c -sizes 4,16,64,256,1024 -label c-1 -header
clean
