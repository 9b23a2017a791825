#!/usr/bin/env bash
# The device-machine measurement batch (32 cores, Open MPI 4.1.6): run from
# the repository root with binaries built here (make build) and carried in
# bin/. Usage: bench/device.sh OUTDIR [quick]
# Every sweep compares DPML with the native MPI_Allreduce in the same run.
set -u
OUTDIR=${1:?outdir}
MODE=${2:-full}
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ lscpu; free -g; mpirun --version; } >"$OUTDIR/machine.txt" 2>&1
SIZES=${SIZES:-8:64M:x2}
ONE="mpirun --allow-run-as-root -np 32 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
run() { echo "+ $*" | tee -a "$OUTDIR/commands.txt"; "$@"; }
# 1 node x 32: Open MPI tuned (default) and HAN as native baselines.
run $ONE bin/dpmlbench -membw -sizes "$SIZES" -leaders 1,4,8,16,32 -pipeline 1 -phases -check \
  -time "${TIME:-200ms}" -quiet -out "$OUTDIR/1x32-tuned" 2>&1 | tee "$OUTDIR/1x32-tuned.txt"
run $ONE --mca coll_han_priority 100 bin/dpmlbench -variants native,auto -sizes "$SIZES" \
  -time "${TIME:-200ms}" -quiet -out "$OUTDIR/1x32-han" 2>&1 | tee "$OUTDIR/1x32-han.txt"
[ "$MODE" = quick ] && exit 0
# 4 fake nodes x 8 ranks, 8 cores each.
run bin/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8 -- --mca btl_vader_single_copy_mechanism cma -- \
  bin/dpmlbench -membw -sizes "$SIZES" -leaders 1,2,4,8 -pipeline 1,2,4 -phases -check \
  -time "${TIME:-200ms}" -quiet -out "$OUTDIR/4x8" 2>&1 | tee "$OUTDIR/4x8.txt"
