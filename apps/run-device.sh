#!/usr/bin/env bash
# Runs the mini-apps (apps/hpcg, apps/miniamr) for every app x backend x
# layout and writes one JSON result per run, then the Fig. 11-style table.
#
#   apps/run-device.sh OUTDIR [LAYOUT...]      layouts: 1x32 4x8 (default both)
#
# From the repository root, with the binaries in $BIN (default bin/):
#   make build                                   # bin/dpmlrun
#   GOEXPERIMENT=simd go build -o bin/ ./apps/hpcg/cmd/hpcg ./apps/miniamr/cmd/miniamr ./apps/cmd/apptable
# (the script builds the three app binaries itself when they are missing and
# go is in PATH). Results: OUTDIR/<app>-<layout>-<backend>-r<rep>.json and
# .txt (the run's output), OUTDIR/commands.txt, OUTDIR/machine.txt,
# OUTDIR/table.txt and table.md (apptable). Repetitions interleave the
# backends (rep 1 of every backend, then rep 2, ...) so drift of the
# machine does not favour one backend.
#
# Environment (defaults in brackets):
#   BIN        binaries [bin]
#   BACKENDS   [native dpml dpml-l1 dpml-l2 dpml-l4 dpml-l8]
#   APPS       [hpcg miniamr miniamr-v1024]; miniamr-v1024 is miniamr with
#              1024 variables of 4^3 cells per block: 8 KiB checksums
#   REPS       repetitions [2]
#   HPCG_ARGS      [-nx 16 -ny 16 -nz 16 -iters 50 -sets 20 -warmup 2]
#   MINIAMR_ARGS   [-lattice -nx 8 -vars 40 -num-refine 3 -steps 10 -stages 10 -checksum-freq 2]
#   MINIAMR_V1024_ARGS [-lattice -nx 4 -vars 1024 -num-refine 3 -steps 2 -stages 4 -checksum-freq 1]
#   NP         ranks of the one-node layout [32]; FAKE_NODES x FAKE_PPN [4 x 8]
#   MPIRUN_ONE, MPIRUN_FAKE  the launch commands of the two layouts [as in
#              bench/device.sh: mpirun bound to cores; dpmlrun with
#              -cores-per-node FAKE_PPN]
#   TIMEOUT    seconds per run [180]
set -u
OUTDIR=${1:?usage: apps/run-device.sh OUTDIR [1x32] [4x8]}
shift
LAYOUTS=${*:-1x32 4x8}
BIN=${BIN:-bin}
BACKENDS=${BACKENDS:-native dpml dpml-l1 dpml-l2 dpml-l4 dpml-l8}
APPS=${APPS:-hpcg miniamr miniamr-v1024}
REPS=${REPS:-2}
NP=${NP:-32}
FAKE_NODES=${FAKE_NODES:-4}
FAKE_PPN=${FAKE_PPN:-8}
TIMEOUT=${TIMEOUT:-180}
HPCG_ARGS=${HPCG_ARGS:--nx 16 -ny 16 -nz 16 -iters 50 -sets 20 -warmup 2}
MINIAMR_ARGS=${MINIAMR_ARGS:--lattice -nx 8 -vars 40 -num-refine 3 -steps 10 -stages 10 -checksum-freq 2}
MINIAMR_V1024_ARGS=${MINIAMR_V1024_ARGS:--lattice -nx 4 -vars 1024 -num-refine 3 -steps 2 -stages 4 -checksum-freq 1}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUTDIR"
if [ ! -x "$BIN/hpcg" ] || [ ! -x "$BIN/miniamr" ] || [ ! -x "$BIN/apptable" ]; then
  if command -v go >/dev/null 2>&1; then
    echo "== building the app binaries into $BIN"
    GOEXPERIMENT=${GOEXPERIMENT:-simd} go build -o "$BIN/" ./apps/hpcg/cmd/hpcg ./apps/miniamr/cmd/miniamr ./apps/cmd/apptable || exit 1
  else
    echo "run-device.sh: $BIN/hpcg, $BIN/miniamr or $BIN/apptable missing and no go to build them" >&2
    exit 1
  fi
fi
case " $LAYOUTS " in *" ${FAKE_NODES}x${FAKE_PPN} "*|*" 4x8 "*)
  [ -x "$BIN/dpmlrun" ] || { echo "run-device.sh: $BIN/dpmlrun missing (make build)" >&2; exit 1; } ;;
esac
{ date -u; uname -a; lscpu; free -g; mpirun --version; } >"$OUTDIR/machine.txt" 2>&1

ONE=${MPIRUN_ONE:-mpirun --allow-run-as-root -np $NP --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma}
FAKE=${MPIRUN_FAKE:-$BIN/dpmlrun -nodes $FAKE_NODES -ppn $FAKE_PPN -cores-per-node $FAKE_PPN -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=${DPML_NODE_SPLIT:-host} --}

launcher() { # launcher LAYOUT
  case $1 in
    1x$NP) echo "$ONE" ;;
    ${FAKE_NODES}x${FAKE_PPN}) echo "$FAKE" ;;
    *) echo "run-device.sh: unknown layout $1 (have 1x$NP and ${FAKE_NODES}x${FAKE_PPN})" >&2; return 1 ;;
  esac
}
appcmd() { # appcmd APP -> binary and arguments
  case $1 in
    hpcg) echo "$BIN/hpcg $HPCG_ARGS" ;;
    miniamr) echo "$BIN/miniamr $MINIAMR_ARGS" ;;
    miniamr-v1024) echo "$BIN/miniamr -name miniamr-v1024 $MINIAMR_V1024_ARGS" ;;
    *) echo "run-device.sh: unknown app $1" >&2; return 1 ;;
  esac
}

fails=0
for rep in $(seq 1 "$REPS"); do
  for lay in $LAYOUTS; do
    L=$(launcher "$lay") || exit 2
    for app in $APPS; do
      A=$(appcmd "$app") || exit 2
      for be in $BACKENDS; do
        base="$OUTDIR/$app-$lay-$be-r$rep"
        cmd="$L $A -backend $be -json $base.json"
        echo "+ $cmd" >>"$OUTDIR/commands.txt"
        start=$(date +%s%N)
        # shellcheck disable=SC2086
        timeout -k 10 "$TIMEOUT" $cmd >"$base.txt" 2>&1
        rc=$?
        ms=$((($(date +%s%N) - start) / 1000000))
        printf '== %-14s %-5s %-8s rep %d: exit %d, %d.%03d s\n' "$app" "$lay" "$be" "$rep" "$rc" $((ms / 1000)) $((ms % 1000))
        if [ $rc -ne 0 ]; then
          fails=$((fails + 1))
          tail -n 15 "$base.txt"
        else
          grep -E "total|checksums of|sets x" "$base.txt" | sed 's/^/   /'
        fi
      done
    done
  done
done
"$BIN/apptable" "$OUTDIR" | tee "$OUTDIR/table.txt"
"$BIN/apptable" -format md "$OUTDIR" >"$OUTDIR/table.md"
"$BIN/apptable" -app miniamr -phase refine "$OUTDIR" >"$OUTDIR/table-miniamr-refine.txt" 2>/dev/null
echo "== $fails failed runs; results in $OUTDIR"
[ $fails -eq 0 ]
