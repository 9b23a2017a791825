#!/usr/bin/env bash
# small.sh: where the small-message time goes, one device call.
# The C client (b2b) at 1x32 and 4x8 over small sizes with the tree at
# several radixes against the partitioned plans and the MPI library, the
# same with Go's async preemption off and with the drop-in's DPML_GOSCHED
# switch (procs, pace), and a perf profile of one rank when perf exists.
#
#	bench/diag/small.sh OUTDIR [LIB...]   (run from the repository root)
#
# Each LIB (default bin/libdpml.so) gets its own runs, tagged by its
# directory's name.
set -u
OUT=${1:?outdir}; shift
LIBS=${*:-$PWD/bin/libdpml.so}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NP, FAKE_NODES, FAKE_PPN: the layouts (default 1x32 and 4x8; a 16-core
# kind: NP=16 FAKE_NODES=4 FAKE_PPN=4); output names carry them.
NP=${NP:-32} FN=${FAKE_NODES:-4} FP=${FAKE_PPN:-8}
L1=1x$NP L4=${FN}x$FP
ONE="mpirun --allow-run-as-root -np $NP --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
SIZES=${SMALL_SIZES:-4,8,16,32,64,128,256,512,1K,2K,4K,8K,16K}
CARGS="-sizes $SIZES -time ${SMALL_TIME:-150ms} -min-iters 5 -max-iters ${SMALL_MAXITERS:-20000} -tune-calls 50 -check -quiet"
V1=${SMALL_V1:-native,auto,dpml:intra=tree,r=2,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:intra=tree,r=32,dpml:l=8,intra=shm,dpml:l=max,intra=shm}
V4=${SMALL_V4:-native,auto,dpml:intra=tree,r=2,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=max,intra=shm}
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  echo "+ $*" >>"$OUT/commands.txt"
  local s=$(date +%s)
  timeout -k 5 "$t" "$@" </dev/null >"$OUT/$n.log" 2>&1; local rc=$?
  echo "== $n rc=$rc $(( $(date +%s) - s ))s" | tee -a "$OUT/commands.txt"
}
for lib in $LIBS; do
  tag=$(basename "$(dirname "$lib")")
  run "$L1-b2b-$tag" 120 $ONE -x LD_PRELOAD="$lib" bin/dpmlbench-c -pattern b2b $CARGS -variants "$V1" -out "$OUT/$L1-b2b-$tag"
  run "$L1-b2b-nopreempt-$tag" 90 $ONE -x LD_PRELOAD="$lib" -x GODEBUG=asyncpreemptoff=1 bin/dpmlbench-c -pattern b2b $CARGS \
    -variants native,auto,dpml:intra=tree,r=8,dpml:l=max,intra=shm -out "$OUT/$L1-b2b-nopreempt-$tag"
  # The drop-in's Go scheduler switch (DPML_GOSCHED, unset by default in
  # libdpml.so): a second P / pacing for the C thread that calls into Go.
  for gs in procs pace; do
    run "$L1-b2b-gosched-$gs-$tag" 90 $ONE -x LD_PRELOAD="$lib" -x DPML_GOSCHED=$gs bin/dpmlbench-c -pattern b2b $CARGS \
      -variants native,auto,dpml:intra=tree,r=8,dpml:l=max,intra=shm -out "$OUT/$L1-b2b-gosched-$gs-$tag"
  done
  run "$L4-b2b-$tag" 150 bin/dpmlrun -nodes $FN -ppn $FP -cores-per-node $FP -preload "$lib" -- \
    --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -- bin/dpmlbench-c -pattern b2b $CARGS \
    -variants "$V4" -out "$OUT/$L4-b2b-$tag"
done
# A profile of rank 1 (a tree child) for 4 B and 1 KiB tree calls.
lib=${LIBS%% *}
if command -v perf >/dev/null 2>&1; then
  perf --version >"$OUT/perf-version.txt" 2>&1
  cat >/tmp/perfwrap.sh <<'W'
#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 1 ] || [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec perf record -F 15000 -g -o /tmp/perf-$OMPI_COMM_WORLD_RANK.data "$@"; fi
exec "$@"
W
  chmod +x /tmp/perfwrap.sh
  for sz in 4 1K; do
    run "perf-$sz" 60 $ONE -x LD_PRELOAD="$lib" /tmp/perfwrap.sh bin/dpmlbench-c -pattern b2b -sizes $sz -time 2s -min-iters 5 \
      -max-iters 400000 -variants dpml:intra=tree,r=8 -quiet
    for r in 0 1; do
      perf report -i /tmp/perf-$r.data --stdio --no-children --percent-limit 0.7 2>/dev/null | grep -v "^$" | head -150 >"$OUT/perf-$sz-rank$r.txt"
    done
  done
else
  echo "no perf" >"$OUT/perf-version.txt"
fi
for d in "$OUT"/*/; do [ -f "$d/results.json" ] && bin/dpmlbench table -in "$d/results.json" >"${d%/}.table.txt" 2>&1; done
exit 0
