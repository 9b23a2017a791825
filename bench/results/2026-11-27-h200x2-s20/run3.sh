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
R8=".devbin/s/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm,dpml:l=32,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=4,intra=tree,r=4"
S4="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V4"
one() { # one BUILD LAYOUT PATTERN TAG TIMEOUT ARGS...
  local b=$1 lay=$2 pat=$3 tag=$4 to=$5; shift 5
  local name=c-$b-$lay-$pat-$tag L=$PWD/.devbin/$b/libdpml.so
  if [ $lay = 1x32 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
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
