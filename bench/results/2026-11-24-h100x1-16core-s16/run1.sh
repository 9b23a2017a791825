#!/bin/bash
# Session 16, device call 1 (nvidia-h100-x1, 16 cores), build a (d142da5
# plus gocall's clock probe; the library is d142da5's). Issue 17: what a
# clock read, a cgo call and mpi.Pace cost here (gocall clock); the bare
# loops of gocall (Go: mpi.Allreduce, dpml.Allreduce) against its C twin
# with and without libdpml.so preloaded; dpmlbench (Go) against
# dpmlbench-c (C, libdpml.so) with and without per-call clock reads.
# Issue 16: the C client at 256 B, 1 KiB and 16 KiB after 1000 tuning
# calls (before the keys' scheduled confirmation) against 20000 (after).
. $(dirname $0)/common.sh
L=$PWD/.devbin/a/libdpml.so; G=.devbin/a/dpmlbench
run clock 30 $ONE .devbin/a/gocall clock
SZ=4,16,64,256,1024
for r in 1 2; do
  run gocall-go-$r 60 $ONE .devbin/a/gocall -variants go,go-dpml -sizes $SZ -settle calls:50ms -label go-$r -header
  run gocall-c-$r 60 $ONE $GC -variants c -sizes $SZ -label c-$r -header
  run gocall-cdpml-$r 60 $ONE -x LD_PRELOAD=$L $GC -variants c -sizes $SZ -label cdpml-$r -header
done
SM="-pattern b2b -sizes 4,16,64,256,1K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet -variants native,auto"
for r in 1 2; do for pc in true false; do
  run c-pc$pc-$r 40 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $SM -percall=$pc -out $OUT/c-pc$pc-$r
  run go-pc$pc-$r 40 $ONE -x DPML_VERBOSE=1 $G run $SM -percall=$pc -plots=false -out $OUT/go-pc$pc-$r
done; done
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
for r in 1 2; do for tc in 1000 20000; do
  run c16-tc$tc-$r 60 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern b2b -sizes 256,1K,16K -time 100ms -max-iters 15000 -tune-calls $tc -check -quiet -variants $V -out $OUT/c16-tc$tc-$r
done; done
clean
