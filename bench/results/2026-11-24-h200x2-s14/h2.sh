#!/bin/bash
# Device call h2 (nvidia-h200-x2): the skew (S = 20 us) and barrier
# patterns (s14f, and s14 for skew 1x32), 100,000-call auto runs (switch
# counts, issue 16), and issue 17's Go callers: bench/diag/gocall.sh
# (mpi.Allreduce from Go against the same loop in C, 1x32 and 4x8, 2
# rounds), and dpml.Allreduce from Go with the tuner on (gocall go-dpml,
# default settings) against the C client's auto of h1.
OUT=$1; mkdir -p $OUT; . $(dirname $0)/common.sh
for b in s14f s14; do one $b 1x32 skew 1 60 $V1 $S; done
one s14f 4x8 skew 1 80 $V4 $S
one s14f 1x32 barrier 1 60 $V1 $S
one s14f 1x32 b2b long 60 native,auto -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000
one s14f 1x32 skew long 90 native,auto -sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000
# Go callers: gocall.sh wants gocall, gocall-c and dpmlrun in one folder.
mkdir -p /tmp/gbin && cp .devbin/s14f/gocall .devbin/s14f/gocall-c .devbin/s9/dpmlrun /tmp/gbin/
[ $(left) -gt 120 ] && ROUNDS=2 DEADLINE=$(( $(left) - 60 )) bash bench/diag/gocall.sh $OUT/gocall /tmp/gbin "1x32 4x8" > $OUT/gocall.out 2>&1
for r in 1 2; do
  [ $(left) -lt 20 ] && break
  log "$ONE .devbin/s14f/gocall -variants go-dpml -sizes 4,8,64,256,1024,4096,16384,65536 -settle calls:50ms -label auto-$r"
  timeout 60 $ONE .devbin/s14f/gocall -variants go-dpml -sizes 4,8,64,256,1024,4096,16384,65536 -settle calls:50ms -label auto-$r -header > $OUT/gocall-dpml-$r.csv 2> $OUT/gocall-dpml-$r.log
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done
