#!/bin/bash
# Device call h1 (nvidia-h200-x2): issues 15 and 16, back to back (b2b).
# 1x32: 3 runs per build, 4 B-64 KiB, interleaved; 4x8: 2 runs per build;
# then one run per build of 4 B-64 MiB (x4 steps, fewer variants).
OUT=$1; mkdir -p $OUT; . $(dirname $0)/common.sh
for r in 1 2 3; do for b in s14 s14f; do one $b 1x32 b2b $r 60 $V1 $S; done; done
for r in 1 2; do for b in s14 s14f; do one $b 4x8 b2b $r 80 $V4 $S; done; done
for b in s14f s14; do one $b 1x32 b2b full 150 native,auto,dpml:intra=tree,dpml:l=8,intra=shm,dpml:l=32,intra=shm -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 1000; done
