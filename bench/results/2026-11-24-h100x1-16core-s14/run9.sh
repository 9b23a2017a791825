#!/bin/bash
# Session 14, device call 9 (nvidia-h100-x1, 16 cores). Which plan does
# auto run in series' interleaved batches (ALT=1500)? s14r auto at 1 KiB
# and 64 B with DPML_VERBOSE=1 (the tuner's table at the end), 2 runs
# each, and the fixed tree r=4 beside it.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s)
{ date -u; nproc; echo "s14r: $(cat .devbin/s14r/COMMIT)"; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for r in 1 2; do for b in 1024 64; do
  for v in auto tree4; do
    xs="-x LD_PRELOAD=$PWD/.devbin/s14r/libdpml.so -x DPML_VERBOSE=1"
    [ $v = tree4 ] && xs="$xs -x DPML_INTRA=tree -x DPML_TREE_RADIX=4"
    echo "+ $ONE $xs .devbin/series/series $b 30000 6000 1500" >> $OUT/commands.txt
    { echo "== $v $b"; timeout 60 $ONE $xs .devbin/series/series $b 30000 6000 1500 2>&1 | grep -E "^(bytes|median|by position)|dpml: tuner|dpml:   |measured"; } >> $OUT/series.txt 2>&1
    echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
  done
done; done
