#!/usr/bin/env bash
# quick.sh: A/B runs of libdpml.so builds and settings with the back-to-back
# C program bench/diag/b2b.c on the device (32 cores), each variant its own
# mpirun, variants interleaved round by round so drift hits all alike.
#
#	bench/diag/quick.sh OUTDIR OLD_LIB NEW_LIB [reps] [layouts]
#
# OLD_LIB/NEW_LIB: libdpml.so builds to compare (e.g. the previous commit's
# and this one's, carried in a git-ignored folder). Layouts: 1x32 4x8.
# Writes OUTDIR/<layout>-<variant>-<rep>.txt and OUTDIR/summary.txt (median
# over reps of each size's median).
set -u
OUT=${1:?outdir}; OLD=${2:?old lib}; NEW=${3:?new lib}; REPS=${4:-3}; LAYOUTS=${5:-1x32 4x8}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpicc -O2 -o /tmp/dpml-b2b bench/diag/b2b.c || exit 1
ONE="mpirun --allow-run-as-root -np 32 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
FAKE="${DPMLRUN:-bin/dpmlrun} -nodes 4 -ppn 8 -cores-per-node 8 -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
MAXB=${MAXB:-1048576}
# VARIANTS_FILE: a shell file setting VARIANTS_1x32 / VARIANTS_4x8 (it may
# use $OLD and $NEW), for a call's own list.
[ -n "${VARIANTS_FILE:-}" ] && . "$VARIANTS_FILE"
# name|library|settings (space-separated VAR=value, exported with -x)
VARIANTS_1x32=${VARIANTS_1x32:-"native||
old|$OLD|
old-static|$OLD|DPML_TUNER=static
new|$NEW|
new-static-notree|$NEW|DPML_TUNER=static DPML_TREE_BYTES=0
new-r2|$NEW|DPML_TREE_RADIX=2 DPML_TREE_BYTES=64K
new-r8|$NEW|DPML_TREE_RADIX=8 DPML_TREE_BYTES=64K
new-r32|$NEW|DPML_TREE_RADIX=32 DPML_TREE_BYTES=64K"}
VARIANTS_4x8=${VARIANTS_4x8:-"native||
old|$OLD|
new|$NEW|
new-static-notree|$NEW|DPML_TUNER=static DPML_TREE_BYTES=0
new-r8|$NEW|DPML_TREE_RADIX=8 DPML_TREE_BYTES=64K"}
echo "+ $0 $*" >"$OUT/commands.txt"
for lay in $LAYOUTS; do
  if [ "$lay" = 1x32 ]; then launch=$ONE; vs=$VARIANTS_1x32; else launch=$FAKE; vs=$VARIANTS_4x8; fi
  for rep in $(seq 1 "$REPS"); do
    while IFS='|' read -r name lib settings; do
      [ -z "$name" ] && continue
      xs=""
      [ -n "$lib" ] && xs="-x LD_PRELOAD=$lib"
      for kv in $settings; do export "${kv?}"; xs="$xs -x ${kv%%=*}"; done
      if [ "$lay" = 1x32 ]; then cmd="$launch $xs /tmp/dpml-b2b 5 $MAXB"; else cmd="$launch $xs -- /tmp/dpml-b2b 5 $MAXB"; fi
      echo "+ $cmd" >>"$OUT/commands.txt"
      timeout -k 5 60 $cmd </dev/null >"$OUT/$lay-$name-$rep.txt" 2>&1 || echo "# exit $?" >>"$OUT/$lay-$name-$rep.txt"
      for kv in $settings; do unset "${kv%%=*}"; done
    done <<<"$vs"
  done
  # summary: per variant and size, the median over reps
  for f in "$OUT/$lay"-*-1.txt; do
    v=${f#"$OUT/$lay-"}; v=${v%-1.txt}
    cat "$OUT/$lay-$v"-*.txt | awk '!/^#/ && NF==3 {print $1, $2}' | sort -k1,1n -k2,2n |
      awk -v lay="$lay" -v v="$v" '{b[NR]=$1; t[NR]=$2} END {i=1; while (i<=NR) {j=i; while (j<NR && b[j+1]==b[i]) j++; printf "%s %s %s %.3f\n", lay, v, b[i], t[int((i+j)/2)]; i=j+1}}'
  done | sort -k1,1 -k2,2 -k3,3n >>"$OUT/summary.txt"
done
cat "$OUT/summary.txt"
