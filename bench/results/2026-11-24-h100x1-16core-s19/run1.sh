#!/bin/bash
# Session 19, device call 1 (nvidia-h100-x1, 16 cores). Issue 16: the
# confirmation's blocks priced call by call (build r) against blocks timed
# from first entry to last exit (build q = e025490, session 18's final):
# the C client dpmlbench-c2 with libdpml.so, auto against fixed plans and
# the MPI library, 4 B-64 KiB, 20000 tuning calls, as session 18's run4.sh;
# builds alternate launch by launch. ORDER (default "q r q r") and
# LAYOUTS (default "4x4 1x16") pick the launches.
. $(dirname $0)/../2026-11-24-h100x1-16core-s18/common.sh
C=.devbin/base/dpmlbench-c2
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=4"
S4="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants $V4"
one() { # one BUILD LAYOUT PATTERN TAG TIMEOUT ARGS...
  local b=$1 lay=$2 pat=$3 tag=$4 to=$5; shift 5
  local name=c-$b-$lay-$pat-$tag L=$PWD/.devbin/$b/libdpml.so
  if [ $lay = 1x16 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to .devbin/c/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
declare -A tag
for lay in ${LAYOUTS:-4x4 1x16}; do
  for b in ${ORDER:-q r q r}; do
    tag[$b]=$(( ${tag[$b]:-0} + 1 )); t=${TAGBASE:-0}; t=$(( t + ${tag[$b]} ))
    for p in barrier skew b2b; do
      if [ $lay = 1x16 ]; then one $b 1x16 $p $t 60 $S; else one $b 4x4 $p $t 90 $S4; fi
    done
  done
  unset tag; declare -A tag
done
clean
