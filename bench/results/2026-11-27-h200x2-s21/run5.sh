#!/bin/bash
# Session 21, third device call (nvidia-h200-x2): more runs of build s
# (cfbaa11) where s3/s4 left a cell of issue 16 above 5% from one or two
# runs: 1x32 barrier 16 MiB (one run, auto on the same plan as the best
# fixed one, 8 calls per batch), 1x32 b2b 1 KiB (two runs, 0.994 and
# 1.189), and 1x32 b2b above 64 KiB (build r only so far). Same arguments
# as run3.sh/run4.sh, so runs pool. Most needed first; a run that would not
# fit the budget is skipped (common.sh).
#   BUDGET=560 bash bench/results/2026-11-27-h200x2-s21/run5.sh $OUT/s5
. $(dirname $0)/../2026-11-24-h200x2-s18/common.sh
C=.devbin/s/dpmlbench-c
. $(dirname $0)/../2026-11-27-h200x2-s20/issue16.sh
B="-sizes 256K:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 300 -check -quiet"
V1="native,auto,dpml:l=16,intra=shm,dpml:l=32,intra=shm"
V8="native,auto,dpml:l=4,intra=shm,dpml:l=8,intra=shm,pipelined:l=8,k=4"
one s 1x32 barrier big2 90 $B -run 10 -variants $V1
one s 1x32 b2b big1 90 $B -variants $V1
one s 1x32 b2b 3 50 $S
one s 1x32 barrier big3 90 $B -run 10 -variants $V1
one s 1x32 b2b big2 90 $B -variants $V1
one s 1x32 b2b 4 50 $S
one s 4x8 b2b big2 100 $B -variants $V8
one s 1x32 skew big2 90 $B -run 10 -variants $V1
one s 4x8 barrier big2 100 $B -run 10 -variants $V8
clean
