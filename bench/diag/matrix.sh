#!/usr/bin/env bash
# Which part of the fake-node launch hangs on a given machine: the recipe of
# shared/notes/platform.md, then each addition dpmlrun makes to it.
set -u
OUTDIR=${1:?outdir}; mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpicc -o /tmp/stages bench/diag/stages.c || exit 1
cat >/tmp/agent.sh <<'A'
#!/bin/sh
while [ $# -gt 0 ]; do case $1 in -x|-T|-t|-q|-A) shift;; -o|-p|-l|-i) shift 2;; -*) shift;; *) break;; esac; done
h=$1; shift
exec unshare --uts sh -c "hostname $h; exec $*"
A
chmod +x /tmp/agent.sh
printf 'node1 slots=2\nnode2 slots=2\n' >/tmp/hosts
BASE="mpirun --allow-run-as-root -np 4 --mca plm rsh --mca plm_rsh_agent /tmp/agent.sh --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
t() { local n=$1; shift; echo "== $n: $*"; timeout -k 3 20 "$@" >"$OUTDIR/$n.txt" 2>&1; echo "== $n exit $?"; grep -c finalized "$OUTDIR/$n.txt"; sort "$OUTDIR/$n.txt" | head -12; }
t notes $BASE --hostfile /tmp/hosts /tmp/stages
t host $BASE --host node1:2,node2:2 /tmp/stages
t notree $BASE --hostfile /tmp/hosts --mca plm_rsh_no_tree_spawn 1 /tmp/stages
t tmpdir $BASE --hostfile /tmp/hosts --mca orte_tmpdir_base /tmp/dx /tmp/stages
t vaderdir $BASE --hostfile /tmp/hosts --mca btl_vader_backing_directory /dev/shm/dx /tmp/stages
t dpmlrun bin/dpmlrun -nodes 2 -ppn 2 -cores-per-node 2 -- /tmp/stages
