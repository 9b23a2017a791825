#!/bin/bash
# device.sh OUT NEW [OLD]: the cold and warm MPI_Allreduce tables of
# bench/results on one 32-core node (1x32, and 4 emulated nodes x 8).
# NEW and OLD are folders of device programs built by bench/devbin.sh
# (libdpml.so, dpmlbench-c, dpmlrun; xz-compressed); OLD is optional (the
# build to compare with). Every run uses NEW's dpmlbench-c, the C client,
# with libdpml.so preloaded. Per launch and layout, builds alternating:
#   cold, back to back, N = 100 calls per size, 4 B-16 MiB
#   cold-barrier, N = 100, 4 B-16 MiB
#   cold, back to back, N = 10, 4 B-64 MiB
# for DPML's defaults (auto), DPML_TUNER=model and OLD's defaults (OLD
# last in odd launches, first in even ones); then warm (b2b after 2,000
# untimed calls per size, 4 B-4 MiB) for NEW and OLD, in the same order;
# then, on 1x32, a tuning run that writes the machine profile (warm, the
# learner without its budget) and the cold pattern again starting from
# it, and the cold pattern of fixed plans (FIXEDVARIANTS: the MPI library
# and a set of trees, copies and pipelines), twice, for the best fixed
# plan per size; then the first-call probe (firstcall.c). Every other run has a
# machine-profile directory of its own, empty: a new user's first runs.
# BUDGET (seconds, default 540) bounds the whole; LAUNCHES (default 2)
# repeats the main loop; LAYOUTS ("1x32 4x8"), PATTERNS ("cold100 bar100
# cold10"), WARM (1), PROFILE (1), FIXED (1) and PROBE (1) select parts; a layout
# 1xN runs N ranks under mpirun (MPIRUN_ARGS, default "--bind-to core
# --map-by core"), MxN runs M emulated nodes of N ranks under dpmlrun
# (DPMLRUN_ARGS, default "-cores-per-node N"), the profile runs use the
# first layout; SIZES100, SIZES10 and SIZESWARM replace the patterns'
# -sizes; AUTOENV (VAR=VALUE
# words) is added to the cold runs of NEW's defaults, e.g. DPML_VERBOSE=1
# for the tuner's overhead per recorded call, and OLDENV to OLD's.
set -u
OUT=$1 NEW=$2 OLD=${3:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((${BUDGET:-540} - ($(date +%s) - T0))); }
mkdir -p $OUT/r
for d in $NEW $OLD; do for f in $d/*.xz; do [ -e "$f" ] && xz -dkf $f; done; chmod +x $d/* 2>/dev/null; done
C=$NEW/dpmlbench-c
{ date -u; nproc; lscpu | head -20; mpirun --version | head -1; for d in $NEW $OLD; do echo "$d: $(cat $d/COMMIT)"; done; } > $OUT/r/machine.txt 2>&1
MPIRUN="mpirun --allow-run-as-root ${MPIRUN_ARGS:---bind-to core --map-by core} --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
RA="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
LAYOUTS=${LAYOUTS:-1x32 4x8}
FIRST=${LAYOUTS%% *}
ONE="$MPIRUN -np ${FIRST#*x}" # the probe's and the profile's layout (1xN)
abs() { case $1 in /*) echo $1 ;; *) echo $PWD/$1 ;; esac; }
run() { # run NAME TIMEOUT CMD...
	local name=$1 to=$2; shift 2
	[ $(left) -lt $to ] && { echo "skipped $name ($(left) s left)" >> $OUT/r/commands.txt; return; }
	echo "+ $*" >> $OUT/r/commands.txt
	timeout $to "$@" > $OUT/r/$name.log 2>&1
	echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/r/commands.txt
}
one() { # one NAME LAYOUT BUILDDIR ENV TIMEOUT CLIENTARGS...: ENV is VAR=VALUE words
	local name=$1 lay=$2 b=$3 env=$4 to=$5; shift 5
	local L=$(abs $b)/libdpml.so x="" e
	case " $env " in *" DPML_PROFILE_DIR="*) ;; *) env="$env DPML_PROFILE_DIR=$OUT/r/profile-$name" ;; esac
	for e in $env; do x="$x -x $e"; done
	local nodes=${lay%x*} ppn=${lay#*x}
	if [ $nodes = 1 ]; then
		run $name $to $MPIRUN -np $ppn $x -x LD_PRELOAD=$L $C "$@" -out $OUT/r/$name
	else
		run $name $to $NEW/dpmlrun -nodes $nodes -ppn $ppn ${DPMLRUN_ARGS--cores-per-node $ppn} -preload $L -- $RA $x -- $C "$@" -out $OUT/r/$name
	fi
}
COLD100="-pattern cold -calls 100 -sizes ${SIZES100:-4:16M:x4} -check -variants native,auto"
BAR100="-pattern cold-barrier -calls 100 -sizes ${SIZES100:-4:16M:x4} -check -variants native,auto"
COLD10="-pattern cold -calls 10 -sizes ${SIZES10:-4:64M:x4} -check -variants native,auto"
WARMARGS="-pattern b2b -sizes ${SIZESWARM:-4:4M:x4} -time 30ms -max-iters 2000 -tune-calls 2000 -check -quiet -variants native,auto"
for r in $(seq 1 ${LAUNCHES:-2}); do
	for lay in $LAYOUTS; do
		for pat in ${PATTERNS:-cold100 bar100 cold10}; do
			case $pat in cold100) A=$COLD100;; bar100) A=$BAR100;; cold10) A=$COLD10;; *) continue;; esac
			# Odd launches run NEW first, even ones OLD first: a
			# run's place in the sequence is not the build's.
			[ -n "$OLD" ] && [ $((r % 2)) = 0 ] && one $lay-$pat-old-$r $lay $OLD "${OLDENV:-}" 60 $A
			one $lay-$pat-auto-$r $lay $NEW "${AUTOENV:-}" 60 $A
			one $lay-$pat-model-$r $lay $NEW DPML_TUNER=model 60 $A
			[ -n "$OLD" ] && [ $((r % 2)) = 1 ] && one $lay-$pat-old-$r $lay $OLD "${OLDENV:-}" 60 $A
		done
		[ "${WARM:-1}" = 1 ] || continue
		[ -n "$OLD" ] && [ $((r % 2)) = 0 ] && one $lay-warm-old-$r $lay $OLD "" 90 $WARMARGS
		one $lay-warm-auto-$r $lay $NEW "" 90 $WARMARGS
		[ -n "$OLD" ] && [ $((r % 2)) = 1 ] && one $lay-warm-old-$r $lay $OLD "" 90 $WARMARGS
	done
done
P=$OUT/r/profile-$FIRST
[ "${PROFILE:-1}" = 1 ] && one $FIRST-tune $FIRST $NEW "DPML_TUNER_BUDGET=-1 DPML_PROFILE_DIR=$P" 90 $WARMARGS
for r in $([ "${PROFILE:-1}" = 1 ] && echo 1 2); do
	one $FIRST-cold100-profile-$r $FIRST $NEW "DPML_PROFILE_DIR=$P" 60 $COLD100
	one $FIRST-cold10-profile-$r $FIRST $NEW "DPML_PROFILE_DIR=$P" 60 $COLD10
done
[ "${PROFILE:-1}" = 1 ] && ls -la $P >> $OUT/r/commands.txt 2>&1
FIXEDVARIANTS=${FIXEDVARIANTS:-native,dpml:l=1,intra=tree,r=4,dpml:l=1,intra=tree,r=8,dpml:l=1,intra=tree,r=16,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=16,intra=shm,dpml:l=32,intra=shm,pipelined:l=8,k=2,intra=shm,pipelined:l=8,k=4,intra=shm,pipelined:l=16,k=4,intra=shm}
for r in $([ "${FIXED:-1}" = 1 ] && echo 1 2); do
	one $FIRST-cold100-fixed-$r $FIRST $NEW "" 90 -pattern cold -calls 100 -sizes ${SIZES100:-4:16M:x4} -check -variants $FIXEDVARIANTS
done
if [ "${PROBE:-1}" = 1 ] && command -v mpicc > /dev/null; then
	mpicc -O2 -o $OUT/r/firstcall bench/cold/firstcall.c
	for r in 1 2 3; do
		run probe-mpi-$r 30 $ONE $OUT/r/firstcall
		run probe-new-$r 30 $ONE -x LD_PRELOAD=$(abs $NEW)/libdpml.so $OUT/r/firstcall
		[ -n "$OLD" ] && run probe-old-$r 30 $ONE -x LD_PRELOAD=$(abs $OLD)/libdpml.so $OUT/r/firstcall
	done
	rm -f $OUT/r/firstcall
fi
tar cJf $OUT/cold.tar.xz -C $OUT r && rm -rf $OUT/r
