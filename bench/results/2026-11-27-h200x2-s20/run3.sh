#!/bin/bash
# Ready for the next 32-core call (nvidia-h200-x2), not run in session 20
# (its device time was spent). Issue 16, A/B: build r (5ee6b17's code, the
# runs of s1 and s2) against build s (cfbaa11: the confirmation leaves the
# settled arm by Improve), launches alternating r, s, s, r. The C client
# dpmlbench-c (the same code in both builds) with the build's libdpml.so;
# auto against fixed plans and the MPI library, 4 B-64 KiB, 20000 tuning
# calls, barrier and skew -run 100; 1x32 and 4x8, b2b, barrier, skew.
# Build first, on the development machine:
#   bench/devbin.sh r 2ff1aef && bench/devbin.sh s cfbaa11
# then carry .devbin and run
#   BUDGET=540 bash bench/results/2026-11-27-h200x2-s20/run3.sh $OUT/s3
# Expected length (s1, s2): 1x32 b2b 6 s, barrier 16 s, skew 25 s; 4x8
# b2b 14 s, barrier 36 s, skew 23 s; all of it about 480 s. LAYOUTS
# (default "1x32 4x8") and ORDER (default "r s s r") pick the launches.
. $(dirname $0)/../2026-11-24-h200x2-s18/common.sh
C=.devbin/s/dpmlbench-c
. $(dirname $0)/issue16.sh
declare -A tag
for lay in ${LAYOUTS:-1x32 4x8}; do
  for b in ${ORDER:-r s s r}; do
    tag[$b]=$(( ${tag[$b]:-0} + 1 ))
    for p in b2b barrier skew; do
      if [ $lay = 1x32 ]; then one $b 1x32 $p ${tag[$b]} 50 $S; else one $b 4x8 $p ${tag[$b]} 70 $S4; fi
    done
  done
  unset tag; declare -A tag
done
clean
