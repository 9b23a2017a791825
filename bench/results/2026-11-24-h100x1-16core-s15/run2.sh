#!/bin/bash
# Session 15, device call 2 (nvidia-h100-x1, 16 cores). Builds: cur (the
# session's start, 5dcfe83) and new (cur plus the stride floor's cap:
# a settled key's floor may pass MaxStride). Binaries travel gzipped.
# (1) C client dpmlbench-c, 1x16 b2b, 4 B-64 KiB with 1000 tuning calls
# (keys settle, no confirmation yet), auto and the fixed plans, cur and
# new alternating, 3 runs each. (2) Issue 17 at every size: the Go
# benchmark dpmlbench (dpml.Allreduce, auto; mpi.Allreduce, native)
# against the C client with libdpml.so preloaded (new), b2b 4 B-64 MiB,
# 300 tuning calls, 1x16 (2 runs each, alternating) and 4x4 (1 each).
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
for f in .devbin/*/*.gz; do gunzip -kf $f; done; chmod +x .devbin/*/dpmlbench .devbin/*/dpmlrun 2>/dev/null
C=.devbin/base/dpmlbench-c; G=.devbin/new/dpmlbench
{ date -u; nproc; lscpu | head -20; for d in cur new; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
EMU=".devbin/cur/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4"
log() { echo "+ $*" >> $OUT/commands.txt; }
run() { # run NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  [ $(left) -lt $((to / 2)) ] && { echo "skipped $name ($(left) s left)" >> $OUT/commands.txt; return; }
  log "$*"
  timeout $to "$@" > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 )) ($name)" >> $OUT/commands.txt
}
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
SHORT="-pattern b2b -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 1000 -check -quiet"
for r in 1 2 3; do for b in cur new; do
  run c-$b-1x16-b2b-s$r 40 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$b/libdpml.so $C $SHORT -variants $V -out $OUT/c-$b-1x16-b2b-s$r
done; done
FULL="-pattern b2b -sizes 4:64M:x4 -time 100ms -min-iters 5 -max-iters 2000 -tune-calls 300 -check -quiet"
L=$PWD/.devbin/new/libdpml.so
for r in 1 2; do
  run c-1x16-$r 120 $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C $FULL -variants native,auto -out $OUT/c-1x16-$r
  run go-1x16-$r 120 $ONE -x DPML_VERBOSE=1 $G run $FULL -variants native,auto -plots=false -out $OUT/go-1x16-$r
done
run c-4x4-1 120 $EMU -preload $L -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C $FULL -variants native,auto -out $OUT/c-4x4-1
run go-4x4-1 120 $EMU -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $G run $FULL -variants native,auto -plots=false -out $OUT/go-4x4-1
for f in $OUT/*.log; do grep -v "^libdpml:   DPML_\|^DPML_" $f > $f.t && mv $f.t $f; done
