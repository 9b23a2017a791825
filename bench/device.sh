#!/usr/bin/env bash
# The device-machine measurement batch (32 cores, Open MPI 4.1.6), run from
# the repository root with binaries built here (make build) and carried in
# bin/. Usage: bench/device.sh OUTDIR [steps...]; steps: diag 1x32 1x32cma
# han 4x8 4x8cma dropin tune overhead explore apps1x32 apps4x8 (default:
# all but diag, explore and the apps). DEADLINE=seconds bounds the whole batch: a step's timeout is
# cut to what is left, and steps that would start with under 20 s left are
# skipped (a device call has 10 minutes). After a failed diag step the
# emulated-node steps are skipped and the hung ranks' stacks recorded.
# Every sweep compares DPML with the native MPI_Allreduce in the same run.
set -u
OUTDIR=${1:?outdir}
shift
STEPS=${*:-1x32 1x32cma han 4x8 4x8cma dropin tune}
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ lscpu; free -g; mpirun --version; } >"$OUTDIR/machine.txt" 2>&1
SIZES=${SIZES:-8:64M:x2}
TIME=${TIME:-200ms}
# NP, FAKE_NODES and FAKE_PPN set the layouts (default 1x32 and 4x8, the
# 32-core kind); on a 16-core kind: NP=16 FAKE_NODES=4 FAKE_PPN=4. Output
# names carry the real layout (client-1x16-b2b, ...); step names stay.
NP=${NP:-32} FN=${FAKE_NODES:-4} FP=${FAKE_PPN:-8}
L1=1x$NP L4=${FN}x$FP
ONE="mpirun --allow-run-as-root -np $NP --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
# Nodes by host name: MPI_Comm_split_type(SHARED) hung the emulated nodes on
# the device's Open MPI 4.1.6.
FAKE="bin/dpmlrun -nodes $FN -ppn $FP -cores-per-node $FP -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=${DPML_NODE_SPLIT:-host} --"
# The C client (bin/dpmlbench-c) preloads CLIENT_LIB; with CLIENT_LIB_ALT
# set (another build of libdpml.so, e.g. main's) every client run is repeated
# with it into *-alt directories, so old and new compare in one device call
# (a build without dpmlx.h runs native and auto only: the client cannot set
# its plans).
CLIENT_LIB=${CLIENT_LIB:-$PWD/bin/libdpml.so}
CLIENT_LIB_ALT=${CLIENT_LIB_ALT:-}
CLIENT_PATTERNS=${CLIENT_PATTERNS:-b2b barrier skew}
CLIENT_SIZES=${CLIENT_SIZES:-4:64M:x4}
CLIENT_TIME=${CLIENT_TIME:-100ms}
CLIENT_MAXITERS=${CLIENT_MAXITERS:-2000}
CLIENT_VARIANTS_1x32=${CLIENT_VARIANTS_1x32:-native,auto,dpml:intra=tree,dpml:l=1,intra=shm,dpml:l=4,dpml:l=max}
CLIENT_VARIANTS_4x8=${CLIENT_VARIANTS_4x8:-native,auto,dpml:intra=tree,dpml:l=1,intra=shm,dpml:l=4,dpml:l=max,pipelined:l=max,k=2,pipelined:l=max,k=4}
T0=$(date +%s)
DEADLINE=${DEADLINE:-100000}
FAKE_OK=1
run() { # run NAME TIMEOUT command...
  local name=$1 to=$2; shift 2
  local left=$((DEADLINE - ($(date +%s) - T0)))
  if [ "$left" -lt 20 ]; then echo "== $name: skipped, ${left}s left" | tee -a "$OUTDIR/commands.txt"; return 1; fi
  [ "$to" -gt "$left" ] && to=$left
  echo "+ $*" >>"$OUTDIR/commands.txt"
  echo "== $name: $*"
  timeout -k 10 "$to" "$@" >"$OUTDIR/$name.txt" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $(($(date +%s) - T0))s of the batch"
  tail -n 20 "$OUTDIR/$name.txt"
  return $rc
}
fake() { # fake NAME TIMEOUT command...: skipped once the diag step failed
  if [ $FAKE_OK = 0 ]; then echo "== $1: skipped (diag failed)"; return 1; fi
  run "$@"
}
for s in $STEPS; do case $s in
diag)
  run diag-hostname 60 $FAKE hostname
  if ! run diag-bench 60 $FAKE bin/dpmlbench -sizes 8,64K -variants native,auto -time 20ms -out none; then
    FAKE_OK=0
    run diag-stacks 60 bench/diag/stacks.sh 25 -nodes 4 -ppn 8 -cores-per-node 8 -- --mca btl_vader_single_copy_mechanism cma \
      -x DPML_NODE_SPLIT=host -- bin/dpmlbench -sizes 8,64K -variants native,auto -time 20ms -out none
  fi ;;
1x32)
  run 1x32 300 $ONE bin/dpmlbench -membw -sizes "$SIZES" -leaders 1,2,4,8,16,32 -pipeline 1 -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/1x32" ;;
1x32cma)
  run 1x32cma 300 $ONE bin/dpmlbench -membw -sizes "$SIZES" -leaders 4,8,16,32 -pipeline 1 -intra cma -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/1x32cma" ;;
4x8cma)
  fake 4x8cma 400 $FAKE bin/dpmlbench -sizes "$SIZES" -leaders 2,8 -pipeline 1,4 -intra cma -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/4x8cma" ;;
tune)
  # The tuner on its own: calls per size until it settles, regret curves,
  # and the tables it learned.
  run tune-1x32 200 $ONE bin/dpmlbench tune -sizes 8:64M:x8 -out "$OUTDIR/tuning-1x32.json" -regret "$OUTDIR/regret-1x32"
  fake tune-4x8 300 $FAKE bin/dpmlbench tune -sizes 8:64M:x8 -out "$OUTDIR/tuning-4x8.json" -regret "$OUTDIR/regret-4x8" ;;
han)
  run 1x32-han 200 $ONE --mca coll_han_priority 100 bin/dpmlbench -variants native,auto -sizes "$SIZES" \
    -time "$TIME" -quiet -out "$OUTDIR/1x32-han" ;;
4x8)
  fake 4x8 400 $FAKE bin/dpmlbench -membw -sizes "$SIZES" -leaders 1,2,4,8 -pipeline 1,2,4 -phases -check \
    -time "$TIME" -quiet -out "$OUTDIR/4x8" ;;
dropin)
  # libdpml.so preloaded into a C program vs the Go API, same fixed policy
  # (the tuner off on both sides), 1 x 32; compare bench.c's avg with
  # dpmlbench's mean column.
  mpicc -O2 -o /tmp/dpml-cbench dropin/testdata/bench.c || continue
  run dropin-c-native 200 $ONE /tmp/dpml-cbench -type float -max 64M
  run dropin-c-dpml 200 $ONE -x LD_PRELOAD="$PWD/bin/libdpml.so" -x DPML_TUNER=static /tmp/dpml-cbench -type float -max 64M
  run dropin-go 200 $ONE -x DPML_TUNER=static bin/dpmlbench -variants native,auto -tune-calls 0 -sizes 8:64M:x4 \
    -time "$TIME" -quiet -out "$OUTDIR/dropin-go" ;;
overhead)
  # The tuner's decision cost per call (costmodel/learn benchmarks; the test
  # binary is built here: go test -c -o bin/learn.test ./costmodel/learn).
  run overhead 60 bin/learn.test -test.run '^$' -test.bench . -test.benchtime 200ms -test.benchmem ;;
explore)
  # Engine settings at large messages, 1 x 32: shared-memory segment size
  # (engine default, then 1M and 4M), the streaming copy-out (default on
  # from LLC/ppn bytes) against plain stores, and CLDEMOTE.
  for sb in 0 1M 4M; do
    v=dpml; [ $sb = 0 ] && v=native,dpml
    run "1x32-seg$sb" 60 $ONE bin/dpmlbench -sizes 256K:64M:x4 -leaders 16,32 -pipeline 1 -variants $v -segment-bytes $sb \
      -phases -time "$TIME" -quiet -out "$OUTDIR/1x32-seg$sb"
  done
  run 1x32-nostream 60 $ONE -x DPML_STREAM_BYTES=off bin/dpmlbench -sizes 16M,64M -leaders 16,32 -pipeline 1 -variants dpml \
    -phases -time "$TIME" -quiet -out "$OUTDIR/1x32-nostream"
  # CLDEMOTE after copy-in and reduce (DPML_DEMOTE) against none, same run
  # shape, 64 KiB to 64 MiB.
  for dm in 0 1; do
    run "1x32-demote$dm" 90 $ONE -x DPML_DEMOTE=$dm bin/dpmlbench -sizes 64K:64M:x4 -leaders 16,32 -pipeline 1 \
      -variants native,dpml -phases -time "$TIME" -quiet -out "$OUTDIR/1x32-demote$dm"
  done ;;
client|client1x32|client4x8)
  # MPI_Allreduce timed the way applications call it, from a C
  # program with libdpml.so preloaded, in every call pattern; native, auto
  # and fixed plans interleaved in each run (every ratio from one run).
  # Each pattern's sweep stays well under 3 minutes at 1x32 (-time, fewer
  # calls at large sizes, 50 tuning calls). LD_PRELOAD reaches the ranks
  # through mpirun -x / dpmlrun -preload.
  libs="main=$CLIENT_LIB"
  [ -n "$CLIENT_LIB_ALT" ] && libs="$libs alt=$CLIENT_LIB_ALT"
  cargs="-sizes $CLIENT_SIZES -time $CLIENT_TIME -min-iters 5 -max-iters $CLIENT_MAXITERS -tune-calls 50 -check -quiet"
  for lv in $libs; do
    tag=${lv%%=*} lib=${lv#*=} sfx=""
    [ "$tag" = alt ] && sfx="-alt"
    if [ ! -f "$lib" ]; then echo "== client: $lib: no such library" | tee -a "$OUTDIR/commands.txt"; continue; fi
    for pat in $CLIENT_PATTERNS; do
      if [ "$s" != client4x8 ]; then
        run "client-$L1-$pat$sfx" 240 $ONE -x LD_PRELOAD="$lib" bin/dpmlbench-c -pattern "$pat" $cargs \
          -variants "$CLIENT_VARIANTS_1x32" -out "$OUTDIR/client-$L1-$pat$sfx"
      fi
      if [ "$s" != client1x32 ]; then
        fake "client-$L4-$pat$sfx" 300 bin/dpmlrun -nodes $FN -ppn $FP -cores-per-node $FP -preload "$lib" -- \
          --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=${DPML_NODE_SPLIT:-host} -- bin/dpmlbench-c -pattern "$pat" $cargs \
          -variants "$CLIENT_VARIANTS_4x8" -out "$OUTDIR/client-$L4-$pat$sfx"
      fi
    done
  done ;;
apps1x32|apps4x8)
  # The mini-apps, one layout per step.
  lay=${s#apps}
  if [ "$lay" = 4x8 ] && [ $FAKE_OK = 0 ]; then echo "== apps 4x8: skipped (diag failed)"; continue; fi
  run "apps-$lay" 300 apps/run-device.sh "$OUTDIR/apps" "$lay" ;;
esac; done
