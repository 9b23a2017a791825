#!/usr/bin/env bash
# Assembles the carry folder for bench/mpich/device.sh: the MPICH builds of
# the C benchmark client and libdpml.so, the Open MPI builds of the same
# two (a same-machine reference), and the MPICH runtime of this Debian 12
# machine packed as runtime.tar.gz, because the device (Ubuntu 24.04, Open
# MPI only, no registry) has no MPICH: mpiexec.hydra and hydra_pmi_proxy,
# libmpich.so.12 and every library the carried programs need that is not
# part of the C library itself (UCX, hwloc, libslurm for Hydra, ...), with
# UCX's cma transport module. device.sh uses a carried library only where
# the device lacks one of that name (libmpich.so.12 always).
#
# Usage (repository root): bench/mpich/carry.sh [DIR]   (default .devbin/mpich)
# Then name DIR in the device call's carry list.
set -euo pipefail
DIR=${1:-.devbin/mpich}
MAX_MIB=${MAX_MIB:-40}
command -v mpiexec.hydra >/dev/null || { echo "carry.sh: no mpiexec.hydra: make deps MPI=mpich" >&2; exit 1; }

# The builds: MPICH (bin/mpich/) and Open MPI (bin/), client and library.
make --no-print-directory lib MPI=mpich >/dev/null
make --no-print-directory lib >/dev/null
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
mpicc_mpich=$(command -v mpicc.mpich || echo mpicc)
mpicc_ompi=$(command -v mpicc.openmpi || echo mpicc)
"$mpicc_mpich" -O2 -Wall -I dropin -DDPML_COMMIT="\"$COMMIT\"" -o bin/mpich/dpmlbench-c cmd/dpmlbench-c/dpmlbench-c.c -ldl -lm
"$mpicc_ompi" -O2 -Wall -I dropin -DDPML_COMMIT="\"$COMMIT\"" -o bin/dpmlbench-c cmd/dpmlbench-c/dpmlbench-c.c -ldl -lm

rm -rf "$DIR"
mkdir -p "$DIR/openmpi"
cp bin/mpich/libdpml.so bin/mpich/dpmlbench-c "$DIR/"
cp bin/libdpml.so bin/dpmlbench-c "$DIR/openmpi/"

# The runtime tree: bin/ (Hydra) and lib/ (libraries by soname, ucx/ modules).
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/rt/bin" "$stage/rt/lib/ucx"
hydra=$(readlink -f "$(command -v mpiexec.hydra)")
proxy=$(readlink -f "$(command -v hydra_pmi_proxy)")
cp "$hydra" "$stage/rt/bin/mpiexec.hydra"
cp "$proxy" "$stage/rt/bin/hydra_pmi_proxy"
ucxdir=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libucs\.so\.0 /{print $NF; exit}')")")/ucx
# UCX's modules: only cma (shared memory by process_vm_readv); ib and rdmacm
# need verbs libraries the device has no use for.
for m in "$ucxdir"/libuct_cma.so.0; do
  [ -e "$m" ] && cp -L "$m" "$stage/rt/lib/ucx/"
done
# The C library's own parts every Linux has; everything else is carried.
base='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libgcc_s)\.so'
for f in "$DIR/dpmlbench-c" "$DIR/libdpml.so" "$stage/rt/bin/mpiexec.hydra" "$stage/rt/bin/hydra_pmi_proxy" "$stage/rt/lib/ucx/"*.so.0; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ $name =~ $base ]]; then continue; fi
  cp -L "$path" "$stage/rt/lib/$name"
done
# Libraries needed by the carried libraries themselves (ldd above already
# lists the whole closure of each program).
{
  echo "MPICH runtime carried by bench/mpich/carry.sh from $(. /etc/os-release; echo "$PRETTY_NAME"), commit $COMMIT"
  mpiexec.hydra -version | sed -n '1,3p'
  dpkg-query -W -f '${Package} ${Version}\n' mpich libmpich12 libucx0 libhwloc15 2>/dev/null || true
  (cd "$stage/rt" && find . -type f | sort | xargs sha256sum)
} >"$stage/rt/MANIFEST.txt"
tar -C "$stage" -cf - rt | gzip -9 >"$DIR/runtime.tar.gz"  # gzip: on every machine (libmpich.so.12: 40 MiB, 13 MiB packed)
cp "$stage/rt/MANIFEST.txt" "$DIR/MANIFEST.txt"

size=$(du -sk "$DIR" | cut -f1)
echo "carry.sh: $DIR holds $((size / 1024)) MiB:"
(cd "$DIR" && ls -la . openmpi) | sed 's/^/  /'
echo "carry.sh: runtime libraries:"; tar -tzf "$DIR/runtime.tar.gz" | sed 's/^/  /'
if [ "$size" -gt $((MAX_MIB * 1024)) ]; then
  echo "carry.sh: $DIR is over $MAX_MIB MiB" >&2; exit 1
fi
