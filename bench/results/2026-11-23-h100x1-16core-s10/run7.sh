#!/bin/bash
# Session 10, device call 7 (nvidia-h100-x1, 16 cores): VZEROUPPER after the
# vector kernels. s10 (32df535's engine, the trace hooks compiled out) against
# s10v (the same plus archsimd.ClearAVXUpperBits after every vector loop),
# the C client dpmlbench-c with libdpml.so preloaded, interleaved per build:
#  A. 1x16 skew (0-20 us of compute before each call), 2 runs per build.
#  B. 4x4 (dpmlrun) skew, 1 run per build.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in s10 s10v; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=8"
one() { # one BUILD LAYOUT PATTERN TAG VARIANTS ARGS...
  local lib=$1 lay=$2 pat=$3 tag=$4 v=$5; shift 5
  [ $(left) -lt 40 ] && { echo "skipped $lib $lay $pat $tag" >> $OUT/commands.txt; return; }
  local name=c-$lib-$lay-$pat-$tag
  if [ $lay = 1x16 ]; then
    log "$ONE -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 70 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  else
    log ".devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload .devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -- $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 70 .devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $PWD/.devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -- $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  fi
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
S="-sizes 8,256,2K,8K,64K -time 100ms -max-iters 4000 -tune-calls 3000"
for r in 1 2; do for lib in s10 s10v; do one $lib 1x16 skew $r $V $S; done; done
for r in 1; do for lib in s10 s10v; do one $lib 4x4 skew $r $V4 $S; done; done
