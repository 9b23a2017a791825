#!/bin/bash
# Ready for the next 32-core call (nvidia-h200-x2), not run in session 21
# (its device time was spent). Issue 16's switch bound for build s
# (cfbaa11): plan switches per key over 101,003 calls of a steady pattern
# (1000 tuning calls, then 100,000 timed), b2b and skew, 8 B, 64 B, 1 KiB,
# 16 KiB, as session 20's run2.sh measured for build r on 1x32 only; here
# 1x32 and 4x8, two launches each. Then a second 4x8 skew run above
# 64 KiB (s4 had one). Build on the development machine:
#   bench/devbin.sh s cfbaa11
# carry .devbin/s/{libdpml.so,dpmlbench-c,dpmlrun}.xz and .devbin/s/COMMIT,
# then
#   BUDGET=540 bash bench/results/2026-11-27-h200x2-s21/run6.sh $OUT/s6
# Counts: grep -h "^dpml:   [a-z0-9]*/" in each *-long*.log (the tuner's
# table under DPML_VERBOSE=1), or the plan.switches of results.json.
# Expected length: 1x32 b2b 9 s, skew 32 s (s20); 4x8 about three times.
. $(dirname $0)/../2026-11-24-h200x2-s18/common.sh
C=.devbin/s/dpmlbench-c
. $(dirname $0)/../2026-11-27-h200x2-s20/issue16.sh
LONG="-sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000 -check -quiet -variants native,auto"
for r in 1 2; do
  for p in b2b skew; do one s 1x32 $p long$r 60 $LONG; done
  for p in b2b skew; do one s 4x8 $p long$r 150 $LONG; done
done
one s 4x8 skew big2 100 -sizes 256K:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 300 -run 10 -check -quiet -variants native,auto,dpml:l=4,intra=shm,dpml:l=8,intra=shm,pipelined:l=8,k=4
clean
