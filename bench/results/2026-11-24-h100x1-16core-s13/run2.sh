#!/bin/bash
# Session 13, device call 2 (nvidia-h100-x1, 16 cores; nvidia-h200-x2 not
# lent). Builds: s13 (1dbd9e7) and s13w (s13 + an exploring key with tree
# arms takes a call that follows another arm's call as a warm-up, not a
# sample). C client dpmlbench-c with libdpml.so preloaded; auto, fixed
# plans and the MPI library in the same run, interleaved per size.
#  1x16 b2b: 3 runs per build, interleaved; 100,000-call runs of auto for
#  the switch counts: b2b 2 per build, skew 1 per build; 1x16 skew and
#  barrier 1 run per build; 4x4 b2b 1 run per build.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in s13 s13w; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=8"
S="-sizes 4,8,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 10000"
L="-sizes 8,64,1K,16K -iters 100000 -max-iters 100000 -batches 10 -tune-calls 1000"
one() { # one BUILD LAYOUT PATTERN TAG VARIANTS ARGS...
  local lib=$1 lay=$2 pat=$3 tag=$4 v=$5; shift 5
  [ $(left) -lt 45 ] && { echo "skipped $lib $lay $pat $tag" >> $OUT/commands.txt; return; }
  local name=c-$lib-$lay-$pat-$tag
  if [ $lay = 1x16 ]; then
    log "$ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 80 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  else
    log ".devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload .devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 80 .devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $PWD/.devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  fi
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2 3; do for lib in s13 s13w; do one $lib 1x16 b2b $r $V $S; done; done
for r in 1 2; do for lib in s13w s13; do one $lib 1x16 b2b long$r native,auto $L; done; done
for lib in s13w s13; do one $lib 1x16 skew long native,auto $L; done
for lib in s13 s13w; do one $lib 1x16 skew 1 $V $S; done
for lib in s13 s13w; do one $lib 1x16 barrier 1 $V $S; done
for lib in s13 s13w; do one $lib 4x4 b2b 1 $V4 $S; done
