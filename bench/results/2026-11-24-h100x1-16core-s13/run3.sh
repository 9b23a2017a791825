#!/bin/bash
# Session 13, device call 3 (nvidia-h100-x1, 16 cores): bench/diag/xchg on
# dpmlrun's emulated nodes (TCP over loopback between nodes): the node
# leaders' MPI_Allreduce against a one-round exchange (Irecv/Isend to every
# other leader, Waitall, fold in node order) and MPI_Allgather + fold, back
# to back, interleaved per size; 3 runs per layout, layouts interleaved.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | head -20; } > $OUT/machine.txt 2>&1
for r in 1 2 3; do
  for lay in 2x8 4x4 8x2 16x1; do
    [ $(left) -lt 40 ] && { echo "skipped $lay $r" >> $OUT/commands.txt; continue; }
    n=${lay%x*}; p=${lay#*x}
    cmd=".devbin/s9/dpmlrun -nodes $n -ppn $p -cores-per-node $p -- --mca btl_vader_single_copy_mechanism cma -- .devbin/xchg/xchg 2000 5"
    echo "+ $cmd" >> $OUT/commands.txt
    timeout 90 $cmd > $OUT/xchg-$lay-$r.csv 2> $OUT/xchg-$lay-$r.log
    echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
  done
done
