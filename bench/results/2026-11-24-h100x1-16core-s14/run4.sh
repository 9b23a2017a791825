#!/bin/bash
# Session 14, device call 4 (nvidia-h100-x1, 16 cores). Builds: s14
# (4f2db27) and s14f (9145207: a settled key's stride has a floor, the
# tuner's measured overhead per recorded call at most 1% of the key's
# time). C client dpmlbench-c with libdpml.so preloaded; auto, fixed plans
# and the MPI library in the same run, interleaved per size.
#  1x16 b2b: 5 more runs per build interleaved; skew and barrier: 1 run
#  per build.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in s14 s14f; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=4,intra=tree,r=8"
S="-sizes 4,8,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 10000"
one() { # one TAG(build[+env]) LAYOUT PATTERN RUN VARIANTS ARGS...
  local tag=$1 lay=$2 pat=$3 run=$4 v=$5; shift 5
  [ $(left) -lt 50 ] && { echo "skipped $tag $lay $pat $run" >> $OUT/commands.txt; return; }
  local lib=${tag%8} env=""; [ $tag = s14f8 ] && env="-x DPML_TUNER_SAMPLES=8"
  local name=c-$tag-$lay-$pat-$run
  if [ $lay = 1x16 ]; then
    log "$ONE -x DPML_VERBOSE=1 $env -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 80 $ONE -x DPML_VERBOSE=1 $env -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  else
    log ".devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload .devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 $env -- $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 80 .devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $PWD/.devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 $env -- $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  fi
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 6 7 8 9 10; do for b in s14 s14f; do one $b 1x16 b2b $r $V $S; done; done
for b in s14 s14f; do one $b 1x16 skew 3 $V $S; done
for b in s14 s14f; do one $b 1x16 barrier 2 $V $S; done
