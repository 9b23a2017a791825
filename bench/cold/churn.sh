#!/bin/bash
# churn.sh OUT NEW: the churn table of bench/results on one node, each
# layout of LAYOUTS (default "1x32 4x8": 1xN runs N ranks under mpirun,
# MxN M emulated nodes of N ranks under dpmlrun): dpmlbench-c -pattern churn, 1,000
# communicators per variant, each used 1-100 times at 4 B-64 KiB and
# freed, the MPI library (native) against libdpml.so's defaults (auto) in
# the same process; communicators duplicated from MPI_COMM_WORLD (dup) or
# split from it with the ranks reversed (reversed); and midway: 40
# reversed splits used 200-3,000 times at 16-64 KiB, long enough that most
# are set up midway (after DPML_SETUP_AFTER of calls) and then freed.
# CHURNS (default "dup reversed midway") selects them. NEW is a folder of
# device programs built by bench/devbin.sh. LAUNCHES (default 2) repeats.
# Results: OUT/churn.tar.xz.
set -u
OUT=$1 NEW=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT/r
for f in $NEW/*.xz; do [ -e "$f" ] && xz -dkf $f; done
chmod +x $NEW/* 2>/dev/null
C=$NEW/dpmlbench-c L=$PWD/$NEW/libdpml.so
{ date -u; nproc; lscpu | head -20; mpirun --version | head -1; echo "$NEW: $(cat $NEW/COMMIT)"; } > $OUT/r/machine.txt 2>&1
ONE="mpirun --allow-run-as-root --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
for r in $(seq 1 ${LAUNCHES:-2}); do
	for c in ${CHURNS:-dup reversed midway}; do
		case $c in
		midway) A="-pattern churn -comms 40 -uses 200:3000 -sizes 16K:64K:x4 -check -churn-comm reversed -variants native,auto" ;;
		*) A="-pattern churn -comms 1000 -sizes 4:64K:x4 -check -churn-comm $c -variants native,auto" ;;
		esac
		for lay in ${LAYOUTS:-1x32 4x8}; do
			name=$lay-churn-$c-$r nodes=${lay%x*} ppn=${lay#*x}
			if [ $nodes = 1 ]; then
				cmd="$ONE -np $ppn -x LD_PRELOAD=$L -x DPML_VERBOSE=1 $C $A"
			else
				cmd="$NEW/dpmlrun -nodes $nodes -ppn $ppn -cores-per-node $ppn -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C $A"
			fi
			echo "+ $cmd" >> $OUT/r/commands.txt
			timeout 60 $cmd > $OUT/r/$name.log 2>&1
			echo "rc=$? ($name)" >> $OUT/r/commands.txt
		done
	done
done
tar cJf $OUT/churn.tar.xz -C $OUT r && rm -rf $OUT/r
