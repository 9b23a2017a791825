#!/bin/bash
# Session 8, device call 1 (nvidia-h100-x1, 1x16), two diagnostics:
#  A. issue 17's first-size transient: bin/gocall (variant go: mpi.Allreduce)
#     with -settle none / calls:50ms / sleep:50ms, against the C twin, 2
#     reps per launch (rep 0 holds the transient), 3 rounds interleaved.
#  B. issue 16's learner: dpmlbench-c b2b with DPML_VERBOSE=1 (tuner table
#     with each key's measured arms) under DPML_TUNER_COST second and last,
#     fixed plans in the same run, 2 runs each interleaved.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((540 - ($(date +%s) - T0))); }
B=.devbin/base
{ date -u; nproc; lscpu | head -20; cat $B/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
: > $OUT/gocall.csv
for r in 1 2 3; do
  [ $(left) -lt 200 ] && break
  log "$ONE $B/gocall-c -sizes 8,4,64,512,4096 -reps 2 -label r$r -variants c"
  timeout 60 $ONE $B/gocall-c -sizes 8,4,64,512,4096 -reps 2 -label r$r -variants c >> $OUT/gocall.csv 2>>$OUT/gocall.err
  for s in none calls:50ms sleep:50ms; do
    a=""; [ $s != none ] && a="-settle $s"
    log "$ONE $B/gocall -variants go -sizes 8,4,64,512,4096 -reps 2 -label $s/r$r $a"
    timeout 60 $ONE $B/gocall -variants go -sizes 8,4,64,512,4096 -reps 2 -label $s/r$r $a >> $OUT/gocall.csv 2>>$OUT/gocall.err
  done
done
echo "A done at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
for r in 1 2; do for cost in second last; do
  [ $(left) -lt 45 ] && break
  log "$ONE -x DPML_VERBOSE=1 -x DPML_TUNER_COST=$cost -x LD_PRELOAD=$B/libdpml.so $B/dpmlbench-c -pattern b2b -sizes 8,256,1K,2K,4K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$cost-b2b-$r"
  timeout 60 $ONE -x DPML_VERBOSE=1 -x DPML_TUNER_COST=$cost -x LD_PRELOAD=$PWD/$B/libdpml.so $B/dpmlbench-c -pattern b2b -sizes 8,256,1K,2K,4K -time 100ms -max-iters 15000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$cost-b2b-$r > $OUT/c-$cost-$r.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
done; done
