#!/bin/bash
# Session 9, device call 3 (nvidia-h100-x1, 16 cores): the learner's cost
# rule (DPML_TUNER_COST second = default, last, penult) on the s9b build (s9 + penult),
# C client (base's dpmlbench-c), b2b, interleaved per rule:
#  A. 1x16 b2b, 3 runs per rule; then skew, 1 run per rule.
#  B. 4x4 (dpmlrun) b2b, 1 run per rule.
#  D. auto alone, 100,000 calls per size (8 B, 256 B, 2 KiB, 16 KiB), per rule,
#     DPML_VERBOSE=1: where each key ends and its switches.
#  C. DPML_VERBOSE=1 tuner tables (measured cost per arm), 1x16 b2b, per rule.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; echo "s9b: $(cat .devbin/s9b/COMMIT)"; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=4,intra=tree,r=8,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=4,intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm"
one() { # one RULE LAYOUT PATTERN TAG VARIANTS ARGS...
  local rule=$1 lay=$2 pat=$3 tag=$4 v=$5; shift 5
  [ $(left) -lt 40 ] && { echo "skipped $rule $lay $pat $tag" >> $OUT/commands.txt; return; }
  local name=c-$rule-$lay-$pat-$tag
  if [ $lay = 1x16 ]; then
    log "$ONE $X -x DPML_TUNER_COST=$rule -x LD_PRELOAD=.devbin/s9b/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 70 $ONE $X -x DPML_TUNER_COST=$rule -x LD_PRELOAD=$PWD/.devbin/s9b/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  else
    log ".devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload .devbin/s9b/libdpml.so -- --mca btl_vader_single_copy_mechanism cma $X -x DPML_TUNER_COST=$rule -x DPML_NODE_SPLIT=host -- $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout 70 .devbin/s9/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4 -preload $PWD/.devbin/s9b/libdpml.so -- --mca btl_vader_single_copy_mechanism cma $X -x DPML_TUNER_COST=$rule -x DPML_NODE_SPLIT=host -- $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  fi
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
X=""
S="-sizes 4,8,64,256,1K,2K,4K,8K,16K -time 100ms -max-iters 15000 -tune-calls 3000"
for r in 1 2 3; do for rule in second last penult; do one $rule 1x16 b2b $r $V $S; done; done
for rule in second last penult; do one $rule 1x16 skew 1 $V -sizes 8,256,2K,16K -time 100ms -max-iters 4000 -tune-calls 3000; done
for r in 1; do for rule in second last penult; do one $rule 4x4 b2b $r $V4 $S; done; done
X="-x DPML_VERBOSE=1"
for rule in second last penult; do one $rule 1x16 b2b v $V -sizes 8,256,2K,16K -time 100ms -max-iters 15000 -tune-calls 3000; done
for rule in second last penult; do one $rule 1x16 b2b long auto -sizes 8,256,2K,16K -time 5s -min-iters 100000 -max-iters 100000 -tune-calls 0; done
