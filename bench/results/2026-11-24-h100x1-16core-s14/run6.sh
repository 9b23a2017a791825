#!/bin/bash
# Session 14, device call 6 (nvidia-h100-x1, 16 cores). Does auto lose
# time at the start of a batch that follows other calls (the C client's
# interleaving)? bench/diag/series with ALT=1500: batches of 1500 timed
# MPI_Allreduce calls, each after 1500 untimed PMPI_Allreduce calls;
# 30,000 calls, the first 6000 left out; mean time by position in the
# batch. s14t auto, the fixed tree r=4, auto with DPML_GOSCHED=off; 64 B
# and 1 KiB; 3 runs each, interleaved.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((400 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | head -20; echo "s14t: $(cat .devbin/s14t/COMMIT)"; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
ser() { # ser TAG BYTES ENV...
  local tag=$1 b=$2; shift 2
  [ $(left) -lt 20 ] && return
  local xs="-x LD_PRELOAD=$PWD/.devbin/s14t/libdpml.so"; for e in "$@"; do xs="$xs -x $e"; done
  echo "+ $ONE $xs .devbin/series/series $b 30000 6000 1500" >> $OUT/commands.txt
  { echo "== $tag $b"; timeout 60 $ONE $xs .devbin/series/series $b 30000 6000 1500; } >> $OUT/series.txt 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2 3; do for b in 64 1024; do
  ser auto $b
  ser tree4 $b DPML_INTRA=tree DPML_TREE_RADIX=4
  ser auto-gosched-off $b DPML_GOSCHED=off
done; done
