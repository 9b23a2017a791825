#!/usr/bin/env bash
# gocall.sh OUTDIR [BINDIR] [LAYOUTS]: Go against C calls on the device, one call,
# under 4 minutes. LAYOUTS: "1x32 4x8" (default); 1xP runs mpirun
# --bind-to core, HxP with H > 1 runs H fake nodes of P cores (locally:
# "1x2 2x1"). A small MPI_Allreduce from a C program (bin/gocall-c)
# against the same loop from Go (bin/gocall), with the mpi package's
# scheduler measures off (DPML_GOSCHED=off: before) and on (auto: after),
# and each measure alone (pace, procs), interleaved in rounds, at
# 1x32 (mpirun --bind-to core) and 4x8 (bin/dpmlrun fake nodes, each rank
# bound to one core of its node by bench/diag/bindlocal.sh). Builds nothing:
# make build here puts gocall, gocall-c and dpmlrun in bin/ (or BINDIR);
# run from the repository root:
#
#	bench/diag/gocall.sh /tmp/gocall-out && tar czf /tmp/gocall.tgz -C /tmp gocall-out
#
# Writes OUTDIR/gocall-<layout>.csv (one row per measurement, see
# bench/diag/gocall/main.go), OUTDIR/threads-<layout>-<mode>.txt (rank 0's
# threads during 8-byte calls), OUTDIR/summary.md (medians over rounds,
# Go/C ratios: bin/gocall summary), commands.txt and machine.txt.
# Environment: ROUNDS (3), SIZES (4,8,64,512,4096), TIME (seconds per
# measurement, 0.1), DEADLINE (seconds for the whole script, 230).
set -u
OUTDIR=${1:?usage: gocall.sh OUTDIR [BINDIR] [LAYOUTS]}
BIN=${2:-bin}
LAYOUTS=${3:-1x32 4x8}
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-4,8,64,512,4096}
TIME=${TIME:-0.1}
DEADLINE=${DEADLINE:-230}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in gocall gocall-c dpmlrun; do
  [ -x "$BIN/$b" ] || { echo "gocall.sh: $BIN/$b missing: run make build first" >&2; exit 2; }
done
{ date -u; "$BIN/gocall" version; lscpu; mpirun --version; } >"$OUTDIR/machine.txt" 2>&1
T0=$(date +%s)
left() { echo $((DEADLINE - ($(date +%s) - T0))); }

run() { # run LAYOUT OUTFILE NAME=VALUE... -- PROG ARGS...: one launch, its stdout appended to OUTFILE
  local layout=$1 out=$2; shift 2
  local xs=()
  while [ "$1" != -- ]; do xs+=(-x "$1"); shift; done
  shift
  local l; l=$(left)
  if [ "$l" -lt 15 ]; then echo "== skipped ($l s left): $layout ${xs[*]} $*" | tee -a "$OUTDIR/commands.txt"; return 1; fi
  local to=$((l < 90 ? l : 90)) cmd
  local h=${layout%x*} p=${layout#*x}
  case $layout in
  1x*) cmd=(mpirun --allow-run-as-root -np "$p" --bind-to core --map-by core --mca btl self,vader "${xs[@]}" "$@") ;;
  *x*) cmd=("$BIN/dpmlrun" -nodes "$h" -ppn "$p" -cores-per-node "$p" -- -x DPML_NODE_SPLIT=host "${xs[@]}" -- "$HERE/bindlocal.sh" "$@") ;;
  *) echo "gocall.sh: layout $layout: want HxP (1x32, 4x8)" >&2; return 1 ;;
  esac
  local err="$OUTDIR/stderr.txt"
  case $out in */threads-*) err=$out ;; esac # rank 0 prints its threads on stderr
  echo "+ ${cmd[*]}" >>"$OUTDIR/commands.txt"
  timeout -k 5 "$to" "${cmd[@]}" >>"$out" 2>>"$err"
  local rc=$?
  [ $rc = 0 ] || echo "== exit $rc: ${cmd[*]}" | tee -a "$OUTDIR/commands.txt"
  return $rc
}

for layout in $LAYOUTS; do : >"$OUTDIR/gocall-$layout.csv"; done
# Rounds outermost, so a deadline cuts the last round of every layout, not
# a whole layout; within a round each layout's launches start one later
# than in the round before, so no variant always follows the same one.
launches=(c off auto pace procs)
for r in $(seq "$ROUNDS"); do
  for layout in $LAYOUTS; do
    csv="$OUTDIR/gocall-$layout.csv"
    common=(-reps 1 -sizes "$SIZES" -time "$TIME" -label "$layout")
    k=$(((r - 1) % ${#launches[@]}))
    for i in $(seq 0 $((${#launches[@]} - 1))); do
      case ${launches[$(((i + k) % ${#launches[@]}))]} in
      c) run "$layout" "$csv" -- "$BIN/gocall-c" "${common[@]}" -variants c,c-iall,c-spin ;;
      off) run "$layout" "$csv" DPML_GOSCHED=off DPML_TUNER=static -- "$BIN/gocall" "${common[@]}" -variants go,go-spin,go-cloop,go-iall,go-dpml ;;
      auto) run "$layout" "$csv" DPML_GOSCHED=auto DPML_TUNER=static -- "$BIN/gocall" "${common[@]}" -variants go,go-spin,go-dpml,go-cwrap ;;
      pace) run "$layout" "$csv" DPML_GOSCHED=pace -- "$BIN/gocall" "${common[@]}" -variants go,go-spin ;;
      procs) run "$layout" "$csv" DPML_GOSCHED=procs -- "$BIN/gocall" "${common[@]}" -variants go,go-spin ;;
      esac
    done
    echo "== $layout round $r done after $(($(date +%s) - T0)) s"
  done
done
for layout in $LAYOUTS; do
  for m in off auto; do
    run "$layout" "$OUTDIR/threads-$layout-$m.txt" DPML_GOSCHED=$m -- "$BIN/gocall" -reps 1 -sizes 8 -time 0.3 \
      -max-iters 100000 -variants go -threads -label "$layout"
  done
done
"$BIN/gocall" summary "$OUTDIR"/gocall-*.csv >"$OUTDIR/summary.md"
cat "$OUTDIR/summary.md"
echo "== done after $(($(date +%s) - T0)) s: $OUTDIR"
