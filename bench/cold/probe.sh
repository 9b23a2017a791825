#!/bin/bash
# probe.sh OUT NEW [OLD]: firstcall.c on one node, each layout of LAYOUTS
# (default "1x32 4x8": 1xN runs N ranks under mpirun, MxN M emulated nodes
# of N ranks under dpmlrun), three launches each: the MPI library alone, NEW's
# libdpml.so with its defaults, NEW with setup at the first call
# (DPML_SETUP_AFTER=0) and DPML_VERBOSE=1 (rank 0 prints what each step
# of setup cost), and OLD's libdpml.so if given.
set -u
OUT=$1 NEW=$2 OLD=${3:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT
for d in $NEW $OLD; do for f in $d/*.xz; do [ -e "$f" ] && xz -dkf $f; done; chmod +x $d/* 2>/dev/null; done
mpicc -O2 -o $OUT/firstcall bench/cold/firstcall.c || exit 1
ONE="mpirun --allow-run-as-root --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
for r in 1 2 3; do
	for lay in ${LAYOUTS:-1x32 4x8}; do
		nodes=${lay%x*} ppn=${lay#*x}
		for v in mpi new setup0 old; do
			L=""; X=""
			case $v in
			mpi) ;;
			new) L=$PWD/$NEW/libdpml.so ;;
			setup0) L=$PWD/$NEW/libdpml.so; X="-x DPML_SETUP_AFTER=0 -x DPML_VERBOSE=1" ;;
			old) [ -n "$OLD" ] || continue; L=$PWD/$OLD/libdpml.so ;;
			esac
			echo "== $lay $v $r"
			if [ $nodes = 1 ]; then
				timeout 60 $ONE -np $ppn $X ${L:+-x LD_PRELOAD=$L} $OUT/firstcall 2>&1 | grep -E "^first|set up in"
			else
				timeout 60 $NEW/dpmlrun -nodes $nodes -ppn $ppn -cores-per-node $ppn ${L:+-preload $L} -- $R8A $X -- $OUT/firstcall 2>&1 | grep -E "^first|set up in"
			fi
		done
	done
done > $OUT/probe.txt
rm -f $OUT/firstcall
