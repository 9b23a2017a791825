#!/bin/sh
# bindlocal.sh PROG ARGS...: exec PROG bound to one CPU of this process's
# allowed set, the (local rank mod count)-th one (OMPI_COMM_WORLD_LOCAL_RANK,
# or MPI_LOCALRANKID for MPICH). dpmlrun's fake nodes run their ranks with
# --bind-to none inside the node's cores (mpirun's --bind-to core would put
# every fake node on the same first cores), so this gives each rank of a
# fake node its own core, as --bind-to core does on a real node:
#
#	bin/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8 -- bench/diag/bindlocal.sh bin/gocall ...
set -e
mask=$(taskset -cp $$ | sed 's/.*: *//')
lr=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}
cpu=$(echo "$mask" | tr ',' '\n' | awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }' |
	awk -v lr="$lr" '{ c[NR - 1] = $1 } END { print c[lr % NR] }')
exec taskset -c "$cpu" "$@"
