#!/usr/bin/env bash
# ab.sh: an old and a new build timed in one device call, alternating, so
# that "slower than before" can be told from the machine's own run-to-run
# noise. Run from the repository root:
#
#	bench/diag/ab.sh OUTDIR OLDBIN NEWBIN
#
# OLDBIN and NEWBIN hold each build's libdpml.so and dpmlbench (make build's
# bin/); the C client is NEWBIN's dpmlbench-c for both (a libdpml.so from
# before the DPMLX extension runs native and its default plan only). Each of
# REPS rounds runs, for old then new (new then old on even rounds):
#   - go-<tag>-<r>: dpmlbench, fixed plans l = 1, 4, NP (k = 1) and the MPI
#     library, 1 x NP ranks;
#   - c-<tag>-<r>: the C client, b2b, native and the build's default plan
#     (DPML_TUNER=static: the engine without the learner), 1 x NP.
# Environment: NP (16), REPS (3), SIZES (8:64M:x4), TIME (50ms), DEADLINE
# (seconds for the whole script, 520).
set -u
OUT=${1:?outdir}
OLD=${2:?old bin dir}
NEW=${3:?new bin dir}
NP=${NP:-16} REPS=${REPS:-3} SIZES=${SIZES:-8:64M:x4} TIME=${TIME:-50ms} DEADLINE=${DEADLINE:-520}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; lscpu; mpirun --version; for b in "$OLD" "$NEW"; do echo "$b: $("$b/dpmlbench" version 2>&1 | head -1)"; done; } >"$OUT/machine.txt" 2>&1
ONE="mpirun --allow-run-as-root -np $NP --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
T0=$(date +%s)
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  local left=$((DEADLINE - ($(date +%s) - T0)))
  if [ "$left" -lt 20 ]; then echo "== $n: skipped, ${left}s left" | tee -a "$OUT/commands.txt"; return 1; fi
  [ "$t" -gt "$left" ] && t=$left
  echo "+ $*" >>"$OUT/commands.txt"
  local s=$(date +%s)
  timeout -k 5 "$t" "$@" </dev/null >"$OUT/$n.log" 2>&1
  echo "== $n rc=$? $(($(date +%s) - s))s" | tee -a "$OUT/commands.txt"
}
for r in $(seq 1 "$REPS"); do
  order="old new"
  [ $((r % 2)) = 0 ] && order="new old"
  for tag in $order; do
    b=$OLD
    [ $tag = new ] && b=$NEW
    run "go-$tag-$r" 150 $ONE "$b/dpmlbench" -sizes "$SIZES" -leaders "1,4,$NP" -pipeline 1 -variants native,dpml -check \
      -time "$TIME" -quiet -out "$OUT/go-$tag-$r"
    run "c-$tag-$r" 120 $ONE -x LD_PRELOAD="$PWD/$b/libdpml.so" -x DPML_TUNER=static "$NEW/dpmlbench-c" -pattern b2b \
      -sizes "${SIZES/8:/4:}" -time "$TIME" -min-iters 5 -max-iters 2000 -check -quiet -variants native,auto -out "$OUT/c-$tag-$r"
  done
done
exit 0
