#!/bin/bash
# Session 9, device call 1 (nvidia-h100-x1, 16 cores; the 32-core kind was
# not lent): s9 (l > 1 reduction trees over disjoint partitions, uncommitted
# at run time; see .devbin/s9/COMMIT) against new2 (a7f52e5's code), the
# same C client (base's dpmlbench-c), interleaved per build:
#  A. 1x16 b2b 4 B-16 KiB, 3 runs per build.
#  B. 4x4 (dpmlrun, 4 emulated nodes of 4 cores) b2b, 3 runs per build.
#  C. skew (0-20 us of compute before each call), 1x16 and 4x4, s9, 1 run.
#  D. the tree's parameters: 1x16 b2b, single trees r=2,4,8,16, s9, 2 runs.
#  E. auto only, 100,000 calls per size (8 B, 256 B, 2 KiB), DPML_VERBOSE=1
#     (the tuner's table: episodes and switches), s9.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in new2 s9; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=tree,r=8,dpml:l=4,intra=tree,r=8,dpml:l=8,intra=tree,r=8,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=tree,r=8,dpml:l=4,intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm"
one() { # one BUILD LAYOUT PATTERN TAG VARIANTS ARGS...
  local lib=$1 lay=$2 pat=$3 tag=$4 v=$5; shift 5
  [ $(left) -lt 40 ] && { echo "skipped $lib $lay $pat $tag" >> $OUT/commands.txt; return; }
  local name=c-$lib-$lay-$pat-$tag
  if [ $lay = 1x16 ]; then
    log "$ONE $X -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 70 $ONE $X -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  else
    log ".devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload .devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma $X -x DPML_NODE_SPLIT=host -- $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 70 .devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $PWD/.devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma $X -x DPML_NODE_SPLIT=host -- $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  fi
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
X=""
S="-sizes 4,8,64,256,1K,2K,4K,8K,16K -time 100ms -max-iters 15000 -tune-calls 3000"
for r in 1 2 3; do for lib in new2 s9; do one $lib 1x16 b2b $r $V $S; done; done
for r in 1 2 3; do for lib in new2 s9; do one $lib 4x4 b2b $r $V4 $S; done; done
one s9 1x16 skew 1 $V -sizes 8,256,2K,8K -time 100ms -max-iters 4000 -tune-calls 3000
one s9 4x4 skew 1 $V4 -sizes 8,256,2K,8K -time 100ms -max-iters 4000 -tune-calls 3000
for r in 1 2; do
  one s9 1x16 b2b fit$r "dpml:intra=tree,r=2,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16" -sizes 4,8,16,32,64,128,256,512,1K,2K,4K,8K,16K -time 60ms -max-iters 10000
done
X="-x DPML_VERBOSE=1"
one s9 1x16 b2b long auto -sizes 8,256,2K -time 5s -min-iters 100000 -max-iters 100000 -tune-calls 0
