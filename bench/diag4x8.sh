#!/usr/bin/env bash
# Diagnose the emulated 4 x 8 layout on the device: which layer hangs.
set -u
OUTDIR=${1:?outdir}; mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ env | grep -i -E "ompi|ucx|pmix|opal" ; ompi_info | grep -i -E "MCA (pml|btl|coll)" ; } >"$OUTDIR/env.txt" 2>&1
mpicc -o /tmp/probe cmd/dpmlrun/testdata/probe.c 2>"$OUTDIR/mpicc.txt"
F="bin/dpmlrun -v -nodes 4 -ppn 8 -cores-per-node 8"
t() { local n=$1 to=$2; shift 2; echo "== $n"; timeout -k 5 "$to" "$@" >"$OUTDIR/$n.txt" 2>&1; echo "== $n exit $?"; tail -n 4 "$OUTDIR/$n.txt"; }
t probe 25 $F -- /tmp/probe
t probe-ob1 25 $F -- --mca pml ob1 -- /tmp/probe
t probe-2x2 25 bin/dpmlrun -v -nodes 2 -ppn 2 -cores-per-node 2 -- /tmp/probe
t bench-ob1 40 $F -- --mca pml ob1 -- bin/dpmlbench -sizes 8,64K -variants native,auto -time 20ms -out none
t bench-2x4 40 bin/dpmlrun -nodes 2 -ppn 4 -cores-per-node 4 -- bin/dpmlbench -sizes 8,64K -variants native,auto -time 20ms -out none
