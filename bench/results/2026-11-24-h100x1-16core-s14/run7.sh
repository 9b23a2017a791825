#!/bin/bash
# Session 14, device call 7 (nvidia-h100-x1, 16 cores). Is run6's loss
# the trips into Go? bench/diag/series with ALT=1500 (as run6), 1 KiB and
# 64 B: s14t auto, d2 auto (s14t's code with settled keys timing one call
# in 4096: far fewer trips into Go; diagnostic, not kept), and the fixed
# tree r=4; 3 runs each, interleaved.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((300 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | head -20; for d in s14t d2; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
ser() { # ser TAG BYTES LIB ENV...
  local tag=$1 b=$2 lib=$3; shift 3
  [ $(left) -lt 20 ] && return
  local xs="-x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so"; for e in "$@"; do xs="$xs -x $e"; done
  echo "+ $ONE $xs .devbin/series/series $b 30000 6000 1500" >> $OUT/commands.txt
  { echo "== $tag $b"; timeout 60 $ONE $xs .devbin/series/series $b 30000 6000 1500; } >> $OUT/series.txt 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
for r in 1 2 3; do for b in 1024 64; do
  ser auto-s14t $b s14t
  ser auto-d2 $b d2
  ser tree4 $b s14t DPML_INTRA=tree DPML_TREE_RADIX=4
done; done
