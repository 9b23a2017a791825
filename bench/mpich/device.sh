#!/usr/bin/env bash
# The MPICH comparison on the device machine (32 cores, Ubuntu 24.04, Open
# MPI only): the C benchmark client (bin/mpich/dpmlbench-c) with the
# MPICH-ABI libdpml.so preloaded, against MPICH's own MPI_Allreduce in the
# same run, 1 node x 32 ranks bound to cores, calls back to back (b2b),
# 4 B to 64 MiB; then, for a same-machine reference, the Open MPI builds the
# same way (bench/device.sh's client1x32 step, with the same variants).
# MPICH comes from the carry folder bench/mpich/carry.sh assembles
# (runtime.tar.gz: Hydra, libmpich.so.12 and what the device may lack).
#
# Usage (repository root): bench/mpich/device.sh [CARRY [OUT]]
# (on nvidia-h200-x2, whose 32 cores the other device runs used)
#   CARRY  carried folder (default .devbin/mpich)
#   OUT    where the tarball goes (default $OUT): mpich-1x32.tar.gz
# Settings (environment): RANKS (32, or the core count if lower), SIZES
# (4:64M:x4), VARIANTS (native,auto), CLIENT_TIME (60ms), CLIENT_MAXITERS
# (20000), OMPI_REF (1: also the Open MPI run), DEADLINE (230 s for the
# whole script: a step's timeout is cut to what is left), MPICH_RT_LIBS
# (auto: carried libraries only where the device lacks that soname,
# libmpich.so.12 always; all: every carried library).
# LDCONFIG names the ldconfig whose -p list says what the machine has (a
# filtering script pretends libraries are missing, to test the choice).
# Locally, with a small rank count:  RANKS=2 SIZES=4,64K OUT=/tmp/o bench/mpich/device.sh
set -u
CARRY=$(cd "${1:-.devbin/mpich}" && pwd) || { echo "device.sh: no carry folder ${1:-.devbin/mpich} (bench/mpich/carry.sh)" >&2; exit 2; }
OUT=${2:-${OUT:?set OUT or pass it as the second argument}}
# 32 ranks, one per core; fewer on a machine with fewer cores (both
# launchers bind a rank per core), named in the results.
if [ -z "${RANKS:-}" ]; then
  RANKS=32
  cores=$(nproc)
  if [ "$cores" -lt 32 ]; then
    echo "== this machine has $cores cores: running 1x$cores instead of 1x32"
    RANKS=$cores
  fi
fi
SIZES=${SIZES:-4:64M:x4}
VARIANTS=${VARIANTS:-native,auto}
CLIENT_TIME=${CLIENT_TIME:-60ms}
CLIENT_MAXITERS=${CLIENT_MAXITERS:-20000}
OMPI_REF=${OMPI_REF:-1}
DEADLINE=${DEADLINE:-230}
MPICH_RT_LIBS=${MPICH_RT_LIBS:-auto}
T0=$(date +%s)
mkdir -p "$OUT"
work=$(mktemp -d /tmp/dpml-mpich-XXXXXX)
res=$work/mpich-1x32
mkdir -p "$res"
# The tarball is written whatever happens after this point.
pack() {
  cp "$0" "$res/device.sh" 2>/dev/null
  tar -C "$work" -czf "$OUT/mpich-1x32.tar.gz" mpich-1x32 && echo "== results: $OUT/mpich-1x32.tar.gz"
  rm -rf "$work"
}
trap pack EXIT

run() { # run NAME TIMEOUT command...: output in NAME.txt, like bench/device.sh
  local name=$1 to=$2; shift 2
  local left=$((DEADLINE - ($(date +%s) - T0)))
  if [ "$left" -lt 15 ]; then echo "== $name: skipped, ${left}s left" | tee -a "$res/commands.txt"; return 1; fi
  [ "$to" -gt "$left" ] && to=$left
  echo "+ $*" >>"$res/commands.txt"
  echo "== $name: $*"
  timeout -k 10 "$to" "$@" >"$res/$name.txt" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $(($(date +%s) - T0))s"
  tail -n 25 "$res/$name.txt"
  return $rc
}

# The runtime: Hydra from the carry (mpiexec.hydra finds hydra_pmi_proxy in
# its own directory), libraries through LD_LIBRARY_PATH, which Hydra passes
# on to the ranks.
tar -C "$work" -xzf "$CARRY/runtime.tar.gz" || exit 1
rt=$work/rt
use=$work/lib
LDCONFIG=${LDCONFIG:-$(command -v ldconfig || echo /sbin/ldconfig)}
has() { "$LDCONFIG" -p 2>/dev/null | grep -q "^[[:space:]]*$1 "; } # has SONAME: the device has it
uselibs() { # uselibs MODE: link the carried libraries MODE says into $use
  rm -rf "$use"; mkdir -p "$use"
  local ucx_missing=0 f n
  # UCX's libraries go together: a carried libucs with the device's libucp
  # (another UCX release) would mix internals.
  for n in libucp.so.0 libucs.so.0 libuct.so.0 libucm.so.0; do
    has "$n" || ucx_missing=1
  done
  for f in "$rt"/lib/*.so*; do
    n=$(basename "$f")
    case $n in libucp.so.0|libucs.so.0|libuct.so.0|libucm.so.0)
      [ "$1" = all ] || [ $ucx_missing = 1 ] && ln -s "$f" "$use/$n"; continue ;;
    esac
    if [ "$1" = all ] || [ "$n" = libmpich.so.12 ] || ! has "$n"; then
      ln -s "$f" "$use/$n"
    fi
  done
  if [ -e "$use/libucs.so.0" ]; then export UCX_MODULE_DIR=$rt/lib/ucx; else unset UCX_MODULE_DIR; fi
}
OLD_PATH=$PATH OLD_LD=${LD_LIBRARY_PATH:-}
uselibs "$MPICH_RT_LIBS"
export PATH=$rt/bin:$OLD_PATH LD_LIBRARY_PATH=$use${OLD_LD:+:$OLD_LD}
HYDRA="$rt/bin/mpiexec.hydra -iface lo"
# A 2-rank check that the carried MPICH starts at all; if it does not with
# the device's own libraries, every carried one is tried.
smoke() {
  run "smoke-$1" 60 $HYDRA -n 2 "$CARRY/dpmlbench-c" -sizes 4 -variants native -time 1ms -min-iters 2 -max-iters 4 -quiet
}
if ! smoke "$MPICH_RT_LIBS" && [ "$MPICH_RT_LIBS" != all ]; then
  MPICH_RT_LIBS=all
  uselibs all
  smoke all || echo "== the carried MPICH does not start here (see smoke-*.txt)"
fi
{
  date -u; echo "carried libraries used ($MPICH_RT_LIBS): $(ls "$use" | tr '\n' ' ')"
  echo "UCX_MODULE_DIR=${UCX_MODULE_DIR:-}"
  lscpu; free -g; cat /etc/os-release
  mpiexec.hydra -version
  ldd "$CARRY/dpmlbench-c" "$CARRY/libdpml.so" "$rt/bin/mpiexec.hydra"
  cat "$CARRY/MANIFEST.txt"
  command -v mpirun && mpirun --version
} >"$res/machine.txt" 2>&1

cargs="-pattern b2b -sizes $SIZES -time $CLIENT_TIME -min-iters 5 -max-iters $CLIENT_MAXITERS -tune-calls 50 -check -quiet -variants $VARIANTS"
# MPICH: 1 x RANKS, each rank bound to a core (Hydra's -bind-to core, as
# --bind-to core --map-by core for Open MPI).
# shellcheck disable=SC2086
run "client-1x$RANKS-b2b-mpich" 150 $HYDRA -n "$RANKS" -bind-to core -genv LD_PRELOAD "$CARRY/libdpml.so" \
  "$CARRY/dpmlbench-c" $cargs -out "$res/client-1x$RANKS-b2b-mpich"

if [ "$OMPI_REF" = 1 ] && [ -f "$CARRY/openmpi/dpmlbench-c" ] && command -v mpirun >/dev/null; then
  # Open MPI on the same machine, as bench/device.sh's client1x32 step
  # (vader with CMA single copy: the faster native baseline there), without
  # the carried MPICH libraries in the way.
  export PATH=$OLD_PATH LD_LIBRARY_PATH=$OLD_LD
  unset UCX_MODULE_DIR
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # shellcheck disable=SC2086
  run "client-1x$RANKS-b2b-openmpi" 120 mpirun --allow-run-as-root -np "$RANKS" --bind-to core --map-by core \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism cma -x LD_PRELOAD="$CARRY/openmpi/libdpml.so" \
    "$CARRY/openmpi/dpmlbench-c" $cargs -out "$res/client-1x$RANKS-b2b-openmpi"
fi
echo "== done after $(($(date +%s) - T0))s"
