#!/usr/bin/env bash
# bench/nccl/device.sh BINDIR: the NCCL channel sweep of issue 20 on the GPU
# machine (2 GPUs, one process, no MPI). Run from the repository root with
# $OUT set; BINDIR (default bin) holds libdpml-nccl-tuner.so and dpmlnccl,
# built here by `make build` (the GPU machine has no Go). Everything lands in
# $OUT/nccl.tgz (the directory nccl/ inside):
#
#   env.txt            nvidia-smi, topology, compilers, NCCL and CUDA versions
#   build.log          how ncclsweep was built (nvcc, or gcc -lcudart as fallback)
#   pass0/             NCCL alone (no plugin loaded): default, and 1..32 channels
#                      forced per communicator (ncclConfig_t minCTAs = maxCTAs = N,
#                      what NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = N does)
#   pass1/             the plugin loaded: NCCL's own choice on default and on
#                      32-channel communicators, every fixed per-call count
#                      (DPML_NCCL_POLICY=C) on 32-channel communicators, the model
#   table.json, picks.md, atlas.png   dpmlnccl table from pass1 (+ pass0 for the atlas)
#   pass2/             the plugin with table.json, against NCCL's default
#   report-pass*.md, busbw-pass*.png  dpmlnccl report
#   device.log         this script's output (NCCL_DEBUG=INFO lines of passes 1 and 2 included)
#
# NCCL_NVLS_ENABLE=0 throughout (NVLS is not shown safe there). Time: about
# 2-3 minutes; each pass is bounded (timeout, and ncclsweep -budget-s stops
# adding sizes before it).
#
# Overrides (the CI test runs this script on fake CUDA and NCCL with them):
#   NVCC=none|path  CUDA_INC  NCCL_INC  CUDA_LIB  NCCL_LIB  SWEEP_EXTRA_SRCS  SWEEP_LIBS
#   SWEEP_MIN (4K)  SWEEP_MAX (1G)  SWEEP_STEP (x2)  SWEEP_REPS (20)  SWEEP_CHANNELS ("1 2 4 8 16 24 32")
#   PLUGIN_COMM (min32)  PASS0_S (70)  PASS1_S (100)  PASS2_S (50)
#   SWEEP_EXTRA_VARIANTS: more pass-1 variants, e.g. 16/ring/ll128@min32,8/tree/ll@min32
#     (fixed algorithm/protocol answers; the table takes them where they win)
set -u

BIN=$(cd "${1:-bin}" 2>/dev/null && pwd) || { echo "device.sh: bin directory ${1:-bin} not found" >&2; BIN=""; }
OUT=${OUT:-$PWD/bench/tmp/nccl-device}
W=$OUT/nccl
mkdir -p "$W"
exec > >(tee -a "$W/device.log") 2>&1

finish() {
	echo "== packing $OUT/nccl.tgz"
	tar czf "$OUT/nccl.tgz" -C "$OUT" nccl && ls -la "$OUT/nccl.tgz"
}
trap finish EXIT

SWEEP_MIN=${SWEEP_MIN:-4K}
SWEEP_MAX=${SWEEP_MAX:-1G}
SWEEP_STEP=${SWEEP_STEP:-x2}
SWEEP_REPS=${SWEEP_REPS:-20}
SWEEP_CHANNELS=${SWEEP_CHANNELS:-1 2 4 8 16 24 32}
PLUGIN_COMM=${PLUGIN_COMM:-min32}
PASS0_S=${PASS0_S:-70}
PASS1_S=${PASS1_S:-100}
PASS2_S=${PASS2_S:-50}
export NCCL_NVLS_ENABLE=0

echo "== device.sh $(date -u +%FT%TZ) in $PWD, bin $BIN, out $W"
T0=$(date +%s)

{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
	echo "uname: $(uname -a)"
	echo "cpus: $(nproc)"
	echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "(no nvidia-smi)"
	echo "== nvidia-smi topo -m"; nvidia-smi topo -m 2>&1 || true
	echo "== nvidia-smi nvlink -s"; nvidia-smi nvlink -s 2>&1 | head -40 || true
	echo "== nvcc"; (command -v nvcc && nvcc --version) 2>&1 || echo "(no nvcc in PATH)"; ls -d /usr/local/cuda* 2>/dev/null
	echo "== gcc"; gcc --version 2>&1 | head -1
	echo "== NCCL packages"; dpkg -l 2>/dev/null | grep -i nccl || true
	echo "== NCCL libraries"; ldconfig -p 2>/dev/null | grep -i -E "libnccl|libcudart" || true
	echo "== environment"; env | grep -E "^(NCCL_|CUDA|DPML_|LD_LIBRARY_PATH|PATH=)" | sort
} > "$W/env.txt" 2>&1
echo "== environment recorded in env.txt"

# Headers and libraries: the first directory that has them.
first_dir() { # first_dir FILE DIR...: print the first DIR holding FILE
	local f=$1; shift
	for d in "$@"; do [ -n "$d" ] && [ -e "$d/$f" ] && { echo "$d"; return 0; }; done
	return 1
}
NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || echo none)}
nvcc_root=""
[ "$NVCC" != none ] && nvcc_root=$(dirname "$(dirname "$NVCC")")
CUDA_INC=${CUDA_INC:-$(first_dir cuda_runtime.h "$nvcc_root/include" /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include /usr/local/cuda-*/include /usr/include)}
NCCL_INC=${NCCL_INC:-$(first_dir nccl.h /usr/include /usr/local/include /usr/local/cuda/include "$CUDA_INC" /usr/include/x86_64-linux-gnu)}
CUDA_LIB=${CUDA_LIB:-$(first_dir libcudart.so "$nvcc_root/lib64" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)}
NCCL_LIB=${NCCL_LIB:-$(first_dir libnccl.so /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/local/cuda/lib64 /usr/lib64 || first_dir libnccl.so.2 /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/local/cuda/lib64 /usr/lib64)}
echo "nvcc: $NVCC"
echo "cuda_runtime.h in: ${CUDA_INC:-NOT FOUND}; libcudart in: ${CUDA_LIB:-NOT FOUND}"
echo "nccl.h in: ${NCCL_INC:-NOT FOUND}; libnccl in: ${NCCL_LIB:-NOT FOUND}"
[ -n "$NCCL_INC" ] && grep -E "^#define NCCL_(MAJOR|MINOR|PATCH)" "$NCCL_INC/nccl.h" | tr '\n' ' ' && echo

# Build ncclsweep: nvcc first (it knows its CUDA), then the host compilers
# on the CUDA runtime; as C, then as C++ (the file is both) in case a
# header does not take C. The first that builds wins; every error is shown.
SRC=cmd/ncclsweep/ncclsweep.c
EXE=$W/ncclsweep
ncclflag=-lnccl
[ -n "$NCCL_LIB" ] && [ ! -e "$NCCL_LIB/libnccl.so" ] && ncclflag=-l:libnccl.so.2
hostlibs=${SWEEP_LIBS:-"${CUDA_LIB:+-L$CUDA_LIB -Wl,-rpath,$CUDA_LIB} ${NCCL_LIB:+-L$NCCL_LIB -Wl,-rpath,$NCCL_LIB} -lcudart $ncclflag -ldl -lm"}
incs="${CUDA_INC:+-I$CUDA_INC} ${NCCL_INC:+-I$NCCL_INC}"
built=""
try_build() { # try_build NAME COMMAND...
	echo "+ ${*:2}"
	if "${@:2}"; then built=$1; return 0; fi
	echo "($1 failed: errors above)"
	return 1
}
{
	# shellcheck disable=SC2086
	{ [ "$NVCC" != none ] && try_build nvcc "$NVCC" -O2 -o "$EXE" "$SRC" ${NCCL_INC:+-I"$NCCL_INC"} ${NCCL_LIB:+-L"$NCCL_LIB" -Xlinker -rpath -Xlinker "$NCCL_LIB"} $ncclflag -ldl -lm; } ||
	{ [ "$NVCC" != none ] && try_build "nvcc -x c++" "$NVCC" -O2 -x c++ -o "$EXE" "$SRC" ${NCCL_INC:+-I"$NCCL_INC"} ${NCCL_LIB:+-L"$NCCL_LIB" -Xlinker -rpath -Xlinker "$NCCL_LIB"} $ncclflag -ldl -lm; } ||
	try_build gcc gcc -O2 -std=gnu11 -Wall $incs -o "$EXE" "$SRC" ${SWEEP_EXTRA_SRCS:-} $hostlibs ||
	try_build "g++ -x c++" g++ -O2 -Wall $incs -o "$EXE" -x c++ "$SRC" -x none ${SWEEP_EXTRA_SRCS:-} $hostlibs
} > "$W/build.log" 2>&1
cat "$W/build.log"
if [ -z "$built" ]; then
	echo "device.sh: ncclsweep did not build (build.log above)"
	exit 1
fi
echo "== ncclsweep built with $built"
ldd "$EXE" 2>/dev/null | grep -E "nccl|cudart" || true

PLUGIN=$BIN/libdpml-nccl-tuner.so
DPMLNCCL=$BIN/dpmlnccl
have_plugin=1
if [ -z "$BIN" ] || [ ! -f "$PLUGIN" ]; then
	echo "device.sh: no $PLUGIN: passes 1 and 2 skipped (make build here, carry bin/)"
	have_plugin=0
else
	echo "== plugin: $(ls -la "$PLUGIN")"
	nm -D --defined-only "$PLUGIN" 2>/dev/null | grep -E "ncclTunerPlugin|dpml_nccl" || true
	ldd "$PLUGIN" 2>/dev/null || true
fi

sizes="-min $SWEEP_MIN -max $SWEEP_MAX -step $SWEEP_STEP -reps $SWEEP_REPS -warmup 5 -check"
join() { local IFS=,; echo "$*"; }

run_pass() { # run_pass NAME SECONDS LABEL VARIANTS [ENV...]
	local name=$1 secs=$2 label=$3 variants=$4
	shift 4
	echo "== $name: $label ($(date -u +%T), at most ${secs}s)"
	echo "+ $* $EXE $sizes -variants $variants -budget-s $((secs - 10)) -out $W/$name"
	env "$@" timeout -k 5 "$secs" "$EXE" $sizes -variants "$variants" -budget-s $((secs - 10)) -label "$label" -out "$W/$name"
	local rc=$?
	echo "== $name: exit $rc"
	return $rc
}

v0="nccl@dflt"
for c in $SWEEP_CHANNELS; do v0="$v0,nccl@$c"; done
run_pass pass0 "$PASS0_S" "pass 0: NCCL alone, channels forced per communicator" "$v0" NCCL_TUNER_PLUGIN=none

if [ "$have_plugin" = 1 ]; then
	v1="nccl@dflt,nccl@$PLUGIN_COMM"
	for c in $SWEEP_CHANNELS; do v1="$v1,$c@$PLUGIN_COMM"; done
	v1="$v1,model@$PLUGIN_COMM,model@dflt${SWEEP_EXTRA_VARIANTS:+,$SWEEP_EXTRA_VARIANTS}"
	run_pass pass1 "$PASS1_S" "pass 1: plugin loaded, fixed per-call channels, model" "$v1" \
		NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV

	if [ -x "$DPMLNCCL" ] && [ -s "$W/pass1/sweep.csv" ]; then
		echo "== table"
		forced=""
		[ -s "$W/pass0/sweep.csv" ] && forced="-forced $W/pass0/sweep.csv"
		# shellcheck disable=SC2086
		"$DPMLNCCL" table -in "$W/pass1/sweep.csv" -comm "$PLUGIN_COMM" -out "$W/table.json" -atlas "$W/atlas.png" -md "$W/picks.md" $forced
	else
		echo "device.sh: no $DPMLNCCL or no pass-1 CSV: no table, pass 2 skipped"
	fi

	if [ -s "$W/table.json" ]; then
		run_pass pass2 "$PASS2_S" "pass 2: plugin with the pass-1 table" "nccl@dflt,nccl@$PLUGIN_COMM,plugin@$PLUGIN_COMM,plugin@dflt" \
			NCCL_TUNER_PLUGIN="$PLUGIN" DPML_NCCL_TABLE="$W/table.json" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV
	fi
fi

if [ -x "$DPMLNCCL" ]; then
	for p in pass0 pass1 pass2; do
		[ -s "$W/$p/sweep.csv" ] || continue
		echo "== report $p"
		"$DPMLNCCL" report -in "$W/$p/sweep.csv" -md "$W/report-$p.md" -plot "$W/busbw-$p.png" | tail -n 40
	done
fi
echo "== device.sh done in $(( $(date +%s) - T0 ))s"
