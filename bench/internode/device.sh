#!/bin/bash
# device.sh OUT BIN: an A/B of the leaders' inter-node step on one 32-core
# node, 4 emulated nodes x 8 ranks (dpmlrun's fake hosts, as
# bench/cold/device.sh runs them). BIN is a folder of device programs
# built by bench/devbin.sh (libdpml.so, dpmlbench-c, dpmlrun, dpmlbench;
# xz-compressed is fine). Every run is the C client dpmlbench-c with BIN's
# libdpml.so preloaded, float32 sum, four variants in the same process,
# size by size:
#   native            the MPI library's MPI_Allreduce alone
#   auto              DPML's default (the tuner; its arms include the
#                     ring's only with DPML_TUNER_RING)
#   auto:inter=ring   the built-in plan with the ring reduce-scatter +
#                     allgather among the leaders (forced)
#   auto:inter=mpi    the same plan with the MPI library's allreduce among
#                     the leaders (forced)
# Patterns, per launch (LAUNCHES, default 2, alternating):
#   warm   b2b after untimed calls: 4 B-1 MiB (1,000 untimed calls of auto
#          per size), then 4-64 MiB (100)
#   cold   the first 10 calls per size and variant, 4 B-64 MiB, engine
#          set up at the first call (DPML_SETUP_AFTER=0, so the forced
#          variants run DPML from the first call too)
#   cold100  the first 100 calls, 4 B-16 MiB, the same
# Every run has an empty machine-profile directory (a new user's first
# runs), DPML_VERBOSE=1 (the plans each size ran, with inter=ring where the
# ring ran, in the run's log) and -check (results against the client's
# oracle). BUDGET (seconds, default 230) bounds the whole: a run that
# would not fit is skipped and listed. Results: OUT/internode.tar.xz
# (results.json/.csv, a markdown table and the log per run, the commands
# and the machine).
set -u
OUT=${1:?usage: device.sh OUT BIN} BIN=${2:?usage: device.sh OUT BIN}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((${BUDGET:-230} - ($(date +%s) - T0))); }
mkdir -p $OUT/r
for f in $BIN/*.xz; do [ -e "$f" ] && xz -dkf $f; done
chmod +x $BIN/* 2>/dev/null
C=$BIN/dpmlbench-c L=$PWD/$BIN/libdpml.so
{ date -u; nproc; lscpu | head -20; mpirun --version | head -1; echo "$BIN: $(cat $BIN/COMMIT 2>/dev/null)"; } > $OUT/r/machine.txt 2>&1
R8="$BIN/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
VARIANTS="native,auto,auto:inter=ring,auto:inter=mpi"
run() { # run NAME TIMEOUT ENV CLIENTARGS...: ENV is VAR=VALUE words
	local name=$1 to=$2 env="$3 DPML_VERBOSE=1 DPML_PROFILE_DIR=$OUT/r/profile-$1" x="" e; shift 3
	[ $(left) -lt $to ] && { echo "skipped $name ($(left) s left)" >> $OUT/r/commands.txt; return; }
	for e in $env; do x="$x -x $e"; done
	echo "+ $R8 -preload $L -- $R8A $x -- $C $* -out $OUT/r/$name" >> $OUT/r/commands.txt
	timeout $to $R8 -preload $L -- $R8A $x -- $C "$@" -out $OUT/r/$name > $OUT/r/$name.log 2>&1
	echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/r/commands.txt
	[ -x $BIN/dpmlbench ] && [ -f $OUT/r/$name/results.json ] &&
		$BIN/dpmlbench table -md -in $OUT/r/$name/results.json > $OUT/r/$name.md 2>&1
	rm -rf $OUT/r/profile-$name
}
WARM="-pattern b2b -time 20ms -max-iters 1000 -check -quiet -variants $VARIANTS"
for r in $(seq 1 ${LAUNCHES:-2}); do
	run warm-small-$r 40 "" $WARM -sizes 4:1M:x4 -tune-calls 1000
	run warm-large-$r 70 "" $WARM -sizes 4M:64M:x4 -tune-calls 100 -min-iters 10
	run cold10-$r 35 DPML_SETUP_AFTER=0 -pattern cold -calls 10 -sizes 4:64M:x4 -check -quiet -variants $VARIANTS
	run cold100-$r 50 DPML_SETUP_AFTER=0 -pattern cold -calls 100 -sizes 4:16M:x4 -check -quiet -variants $VARIANTS
done
tar cJf $OUT/internode.tar.xz -C $OUT r && rm -rf $OUT/r
