#!/usr/bin/env bash
# The device-machine measurement batch (32 cores, Open MPI 4.1.6), run from
# the repository root with binaries built here (make build) and carried in
# bin/. Usage: bench/device.sh OUTDIR [steps...]; steps: diag 1x32 1x32cma
# han 4x8 4x8cma dropin tune (default: all but diag).
# Every sweep compares DPML with the native MPI_Allreduce in the same run.
set -u
OUTDIR=${1:?outdir}
shift
STEPS=${*:-1x32 1x32cma han 4x8 4x8cma dropin tune}
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ lscpu; free -g; mpirun --version; } >"$OUTDIR/machine.txt" 2>&1
SIZES=${SIZES:-8:64M:x2}
TIME=${TIME:-200ms}
ONE="mpirun --allow-run-as-root -np 32 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
# Nodes by host name: MPI_Comm_split_type(SHARED) hung the emulated nodes on
# the device's Open MPI 4.1.6 (bench/results/2026-11-21-h200x2/README.md).
FAKE="bin/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8 -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=${DPML_NODE_SPLIT:-host} --"
run() { # run NAME TIMEOUT command...
  local name=$1 to=$2; shift 2
  echo "+ $*" >>"$OUTDIR/commands.txt"
  echo "== $name: $*"
  timeout -k 10 "$to" "$@" >"$OUTDIR/$name.txt" 2>&1
  echo "== $name: exit $?"
  tail -n 20 "$OUTDIR/$name.txt"
}
for s in $STEPS; do case $s in
diag)
  run diag-hostname 60 $FAKE hostname
  run diag-bench 120 $FAKE bin/dpmlbench -sizes 8,64K -variants native,auto -time 20ms -out none ;;
1x32)
  run 1x32 300 $ONE bin/dpmlbench -membw -sizes "$SIZES" -leaders 4,8,16,32 -pipeline 1 -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/1x32" ;;
1x32cma)
  run 1x32cma 300 $ONE bin/dpmlbench -membw -sizes "$SIZES" -leaders 4,8,16,32 -pipeline 1 -intra cma -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/1x32cma" ;;
4x8cma)
  run 4x8cma 400 $FAKE bin/dpmlbench -sizes "$SIZES" -leaders 2,8 -pipeline 1,4 -intra cma -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/4x8cma" ;;
tune)
  # The tuner on its own: calls per size until it settles, regret curves,
  # and the tables it learned (issue 5).
  run tune-1x32 200 $ONE bin/dpmlbench tune -sizes 8:64M:x8 -out "$OUTDIR/tuning-1x32.json" -regret "$OUTDIR/regret-1x32"
  run tune-4x8 300 $FAKE bin/dpmlbench tune -sizes 8:64M:x8 -out "$OUTDIR/tuning-4x8.json" -regret "$OUTDIR/regret-4x8" ;;
han)
  run 1x32-han 200 $ONE --mca coll_han_priority 100 bin/dpmlbench -variants native,auto -sizes "$SIZES" \
    -time "$TIME" -quiet -out "$OUTDIR/1x32-han" ;;
4x8)
  run 4x8 400 $FAKE bin/dpmlbench -membw -sizes "$SIZES" -leaders 1,2,4,8 -pipeline 1,2,4 -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/4x8" ;;
dropin)
  # libdpml.so preloaded into a C program vs the Go API, same fixed policy
  # (the tuner off on both sides), 1 x 32; compare bench.c's avg with
  # dpmlbench's mean column.
  mpicc -O2 -o /tmp/dpml-cbench dropin/testdata/bench.c || continue
  run dropin-c-native 200 $ONE /tmp/dpml-cbench -type float -max 64M
  run dropin-c-dpml 200 $ONE -x LD_PRELOAD="$PWD/bin/libdpml.so" -x DPML_TUNER=static /tmp/dpml-cbench -type float -max 64M
  run dropin-go 200 $ONE -x DPML_TUNER=static bin/dpmlbench -variants native,auto -tune-calls 0 -sizes 8:64M:x4 \
    -time "$TIME" -quiet -out "$OUTDIR/dropin-go" ;;
esac; done
