#!/usr/bin/env bash
# bench/nccl/device.sh OUTDIR: the NCCL channel sweep and the tuner plugin on
# a GPU machine (2 or more GPUs of one host, one process driving them, no
# MPI). Run from the repository root after `make nccl-plugin` on a machine
# with Go; carry bin/libdpml-nccl-tuner.so and bin/dpmlnccl (the GPU machine
# has no Go). ncclsweep is built here with nvcc (or gcc on the CUDA runtime)
# against the system NCCL.
#
#   1. env.txt         machine: nvidia-smi, topology, NVLink, CPU, CUDA, NCCL
#                      (header, packages, library), environment; commands.txt
#                      lists every command run, build.log the sweep's build
#   2. pass0/runK/     RUNS alternated runs (K = 1..RUNS) of NCCL alone (no
#                      plugin): the default communicator against communicators
#                      with the channel count forced (nccl@N: ncclConfig_t
#                      minCTAs = maxCTAs = N) for allreduce, reduce-scatter and
#                      allgather, SWEEP_MIN to SWEEP_MAX; each run's sweep.csv,
#                      sweep.txt (nccl-tests layout, #wrong from host-computed
#                      expected values) and nccl.log (NCCL_DEBUG=INFO: NCCL's
#                      lines, with each communicator's channels, and the sweep's)
#   3. fit/            dpmlnccl fit of pass 0 (-default-channels: the default
#                      communicator's count from pass 0's NCCL log): builtin.json (the plugin's built-in
#                      data for this machine, channel floor included, ready to
#                      replace nccl/builtin_*.json), table.json (DPML_NCCL_TABLE),
#                      picks.md, atlas.png (fastest forced count per size)
#   4. pass2/LABEL-K/  ROUNDS rounds; in each, one process per label, in an order
#                      that rotates from round to round:
#                        default        NCCL alone
#                        builtin        the plugin as a tuner only, no table: its
#                                       built-in data for the GPU model and link
#                                       it detects, on NCCL's default communicators
#                        table          the same with fit/table.json
#                        comm32         the plugin, no table, on communicators made
#                                       with minCTAs 32 (NO_COMM32: skip)
#                        preload        the plugin preloaded too (LD_PRELOAD): its
#                                       channel floor at communicator creation, no
#                                       table (what a user of the built-in data gets)
#                        preload-table  preloaded, with fit/table.json
#                        paired         preloaded; one process times NCCL alone
#                                       (nccl@dflt: policy off, so no floor) and the
#                                       plugin (plugin@dflt) in turn, sample by sample
#                        paired-table   the same with fit/table.json
#                      PASS2 lists the labels to run (default: all of them)
#   5. compare.md      dpmlnccl compare of the processes: per collective and size
#                      the median over runs, the ratio to NCCL's default, the
#                      criteria (>= 0.98 everywhere, >= 1.03 where pass 0 shows
#                      >= 5% headroom); compare-paired.md the same for the paired
#                      processes (-paired: the median of each process's ratio)
#   6. initcheck/      preloaded, communicators made with ncclCommInitRank and
#                      ncclCommInitAll (-init rank, -init all): the floor on the
#                      other entry points, in their nccl.log
#   7. channels.txt    NCCL's channel counts and the plugin's lines from the logs;
#                      device.log (this script's output); OUTDIR.tgz (everything)
#
# NCCL_NVLS_ENABLE=0 throughout. Every run has a timeout, and runs that would
# start after TOTAL_S seconds are skipped (the log says which). Sizes up to
# SMALL_MAX take SMALL_REPS samples of SMALL_REP_US each (calls of a few
# microseconds: long samples, many of them, the median); the others REPS
# samples of REP_US. About 5 minutes on 2 H200 and 6-7 on 4 with the defaults
# and ROUNDS=5. Variables (defaults):
#   RUNS (3: pass-0 runs)  ROUNDS (RUNS: pass-2 rounds)  PASS2 (all labels above)
#   REPS (5)  REP_US (1000)  SMALL_MAX (1M)  SMALL_REPS (15)  SMALL_REP_US (2000)
#   SWEEP_MIN (4K)  SWEEP_MAX (1G)  SWEEP_STEP (x2)  CHANNELS ("1 2 4 8 16 24 32")
#   COLLS (allreduce,reducescatter,allgather)  TOTAL_S (480)  RUN_S (90: one run's limit)
#   SCALE (1: multiplies the reps and sample lengths)  LINK (nvlink|pcie; default from nvidia-smi topo -m)
#   BIN (bin)  NO_COMM32 (set: skip the comm32 runs)
# Overrides for building elsewhere (the CI test runs this on fake CUDA and NCCL):
#   NVCC=none|path  CUDA_INC  NCCL_INC  CUDA_LIB  NCCL_LIB  SWEEP_EXTRA_SRCS  SWEEP_LIBS
set -u

if [ $# -lt 1 ] || [ -z "$1" ]; then
	echo "usage: bash bench/nccl/device.sh OUTDIR   (from the repository root, after make nccl-plugin)" >&2
	exit 2
fi
W=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "device.sh: cannot make $1" >&2; exit 2; }
exec > >(tee -a "$W/device.log") 2>&1
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }

finish() {
	local rc=$?
	echo "== device.sh done in $(elapsed)s (exit $rc); packing $W.tgz"
	tar czf "$W.tgz" -C "$(dirname "$W")" "$(basename "$W")" 2>/dev/null && ls -la "$W.tgz"
}
trap finish EXIT

SCALE=${SCALE:-1}
RUNS=${RUNS:-3}
ROUNDS=${ROUNDS:-$RUNS}
REPS=${REPS:-5}
REP_US=${REP_US:-1000}
SMALL_MAX=${SMALL_MAX:-1M}
SMALL_REPS=${SMALL_REPS:-15}
SMALL_REP_US=${SMALL_REP_US:-2000}
REPS=$(( REPS * SCALE ))
REP_US=$(( REP_US * SCALE ))
SMALL_REPS=$(( SMALL_REPS * SCALE ))
SMALL_REP_US=$(( SMALL_REP_US * SCALE ))
PASS2=${PASS2:-default builtin table comm32 preload preload-table paired paired-table}
SWEEP_MIN=${SWEEP_MIN:-4K}
SWEEP_MAX=${SWEEP_MAX:-1G}
SWEEP_STEP=${SWEEP_STEP:-x2}
CHANNELS=${CHANNELS:-1 2 4 8 16 24 32}
COLLS=${COLLS:-allreduce,reducescatter,allgather}
TOTAL_S=${TOTAL_S:-480}
RUN_S=${RUN_S:-90}
BIN=${BIN:-bin}
export NCCL_NVLS_ENABLE=0
unset NCCL_MIN_CTAS NCCL_MAX_CTAS NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS NCCL_MIN_NRINGS NCCL_MAX_NRINGS LD_PRELOAD \
	DPML_NCCL_TABLE DPML_NCCL_POLICY DPML_NCCL_GPU DPML_NCCL_LINK DPML_NCCL_FLOOR DPML_VERBOSE

CMDS=$W/commands.txt
: > "$CMDS"
log_cmd() { echo "[$(elapsed)s] $*" >> "$CMDS"; echo "+ $*"; }

echo "== device.sh $(date -u +%FT%TZ) in $PWD -> $W"
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
	echo "host: $(hostname)"
	echo "uname: $(uname -a)"
	echo "cpus: $(nproc)"
	echo "== lscpu"; lscpu 2>/dev/null | head -20
	echo "== memory"; free -g 2>/dev/null
	echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "(no nvidia-smi)"
	echo "== nvidia-smi -L"; nvidia-smi -L 2>&1 || true
	echo "== nvidia-smi topo -m"; nvidia-smi topo -m 2>&1 || true
	echo "== nvidia-smi nvlink -s"; nvidia-smi nvlink -s 2>&1 | head -80 || true
	echo "== nvidia-smi clocks"; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,persistence_mode --format=csv 2>&1 || true
	echo "== nvcc"; (command -v nvcc && nvcc --version) 2>&1 || echo "(no nvcc in PATH)"; ls -d /usr/local/cuda* 2>/dev/null
	echo "== gcc"; gcc --version 2>&1 | head -1
	echo "== NCCL packages"; dpkg -l 2>/dev/null | grep -i nccl || true
	echo "== NCCL libraries"; ldconfig -p 2>/dev/null | grep -i -E "libnccl|libcudart|libnvidia-ml" || true
	echo "== environment"; env | grep -E "^(NCCL_|CUDA|DPML_|LD_LIBRARY_PATH|PATH=)" | sort
} > "$W/env.txt" 2>&1
echo "== machine recorded in env.txt"

if [ -z "${LINK:-}" ]; then
	if nvidia-smi topo -m 2>/dev/null | awk '$1 == "GPU0" { for (i = 2; i <= NF; i++) if ($i ~ /^NV[0-9]+$/) f = 1 } END { exit f ? 0 : 1 }'; then
		LINK=nvlink
	else
		LINK=pcie
	fi
fi
echo "link between the GPUs: $LINK (LINK overrides)" | tee -a "$W/env.txt"

# Headers and libraries: the first directory that has them.
first_dir() { # first_dir FILE DIR...: print the first DIR holding FILE
	local f=$1; shift
	for d in "$@"; do [ -n "$d" ] && [ -e "$d/$f" ] && { echo "$d"; return 0; }; done
	return 1
}
NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || echo none)}
nvcc_root=""
[ "$NVCC" != none ] && nvcc_root=$(dirname "$(dirname "$NVCC")")
CUDA_INC=${CUDA_INC:-$(first_dir cuda_runtime.h "$nvcc_root/include" /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include /usr/include)}
NCCL_INC=${NCCL_INC:-$(first_dir nccl.h /usr/include /usr/local/include /usr/local/cuda/include "$CUDA_INC" /usr/include/x86_64-linux-gnu)}
CUDA_LIB=${CUDA_LIB:-$(first_dir libcudart.so "$nvcc_root/lib64" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)}
NCCL_LIB=${NCCL_LIB:-$(first_dir libnccl.so /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/local/cuda/lib64 /usr/lib64 || first_dir libnccl.so.2 /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/local/cuda/lib64 /usr/lib64)}
{
	echo "nvcc: $NVCC"
	echo "cuda_runtime.h in: ${CUDA_INC:-NOT FOUND}; libcudart in: ${CUDA_LIB:-NOT FOUND}"
	echo "nccl.h in: ${NCCL_INC:-NOT FOUND}; libnccl in: ${NCCL_LIB:-NOT FOUND}"
	[ -n "$NCCL_INC" ] && grep -E "^#define NCCL_(MAJOR|MINOR|PATCH)" "$NCCL_INC/nccl.h" | tr '\n' ' ' && echo
} | tee -a "$W/env.txt"

# Build ncclsweep: nvcc first (it knows its CUDA), then the host compilers
# on the CUDA runtime; as C, then as C++ (the file is both). The first that
# builds wins; every error is kept in build.log.
SRC=cmd/ncclsweep/ncclsweep.c
EXE=$W/ncclsweep
ncclflag=-lnccl
[ -n "$NCCL_LIB" ] && [ ! -e "$NCCL_LIB/libnccl.so" ] && ncclflag=-l:libnccl.so.2
hostlibs=${SWEEP_LIBS:-"${CUDA_LIB:+-L$CUDA_LIB -Wl,-rpath,$CUDA_LIB} ${NCCL_LIB:+-L$NCCL_LIB -Wl,-rpath,$NCCL_LIB} -lcudart $ncclflag -ldl -lm"}
incs="${CUDA_INC:+-I$CUDA_INC} ${NCCL_INC:+-I$NCCL_INC}"
built=""
try_build() { # try_build NAME COMMAND...
	echo "+ ${*:2}"
	echo "[$(elapsed)s] build: ${*:2}" >> "$CMDS"
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
echo "== ncclsweep built with $built in $(elapsed)s"
ldd "$EXE" 2>/dev/null | grep -E "nccl|cudart" | tee -a "$W/env.txt" || true

PLUGIN=""
if [ -f "$BIN/libdpml-nccl-tuner.so" ]; then
	PLUGIN=$(cd "$BIN" && pwd)/libdpml-nccl-tuner.so
	echo "== plugin: $(ls -la "$PLUGIN")"
	nm -D --defined-only "$PLUGIN" 2>/dev/null | grep -E "ncclTunerPlugin|dpml_nccl" || true
else
	echo "device.sh: no $BIN/libdpml-nccl-tuner.so: the plugin runs are skipped (make nccl-plugin, carry bin/)"
fi
DPMLNCCL=""
if [ -x "$BIN/dpmlnccl" ]; then
	DPMLNCCL=$(cd "$BIN" && pwd)/dpmlnccl
else
	echo "device.sh: no $BIN/dpmlnccl: no fit, no table, no comparison (make nccl-plugin, carry bin/)"
fi

common="-colls $COLLS -min $SWEEP_MIN -max $SWEEP_MAX -step $SWEEP_STEP -reps $REPS -warmup 2 -rep-us $REP_US"
common="$common -small-max $SMALL_MAX -small-reps $SMALL_REPS -small-rep-us $SMALL_REP_US"
skipped=""
# [PRE=LIB] [ARGS="..."] sweep DIR LABEL VARIANTS [ENV...]: one ncclsweep run
# into DIR, unless the time budget is spent; with PRE, LIB preloaded into the
# sweep (and nothing else); ARGS replace the common arguments. NCCL's log
# (stdout) and the sweep's (stderr) go to DIR/nccl.log.
sweep() {
	local dir=$1 label=$2 variants=$3
	shift 3
	if [ "$(elapsed)" -ge "$TOTAL_S" ]; then
		echo "== $label: skipped (time budget TOTAL_S=${TOTAL_S}s spent)"
		skipped="$skipped $label"
		return 1
	fi
	local left=$(( TOTAL_S + 20 - $(elapsed) ))
	local limit=$RUN_S
	[ "$left" -lt "$limit" ] && limit=$left
	[ "$limit" -lt 20 ] && limit=20
	mkdir -p "$dir"
	echo "== $label ($(date -u +%T), at most ${limit}s)"
	local args=${ARGS:-$common}
	local pre=()
	[ -n "${PRE:-}" ] && pre=(env LD_PRELOAD="$PRE")
	# shellcheck disable=SC2086
	log_cmd env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING timeout -k 5 "$limit" "${pre[@]}" "$EXE" $args -variants "$variants" \
		-budget-s $(( limit - 10 )) -label "$label" -out "$dir"
	# shellcheck disable=SC2086
	env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING timeout -k 5 "$limit" "${pre[@]}" "$EXE" $args -variants "$variants" \
		-budget-s $(( limit - 10 )) -label "$label" -out "$dir" > "$dir/nccl.log" 2>&1
	local rc=$?
	grep -E "^(ncclsweep|allreduce|reducescatter|allgather) " "$dir/nccl.log" | tail -n 4
	grep -E "WARN|Invalid|error|RESULTS WRONG" "$dir/nccl.log" | head -5
	echo "== $label: exit $rc after $(elapsed)s"
	return $rc
}

# Pass 0: NCCL alone, default against forced channel counts.
v0="nccl@dflt"
for c in $CHANNELS; do v0="$v0,nccl@$c"; done
p0=""
for k in $(seq 1 "$RUNS"); do
	sweep "$W/pass0/run$k" "pass0-run$k" "$v0" NCCL_TUNER_PLUGIN=none
	[ -s "$W/pass0/run$k/sweep.csv" ] && p0="$p0${p0:+,}$W/pass0/run$k/sweep.csv"
done

# Fit: built-in data, table, picks, atlas.
mkdir -p "$W/fit"
if [ -n "$DPMLNCCL" ] && [ -n "$p0" ]; then
	echo "== fit ($(elapsed)s)"
	# NCCL's default communicator's channels: the first communicator of
	# run 1 is nccl@dflt's, and NCCL's INFO line says how many it made.
	DCH=$(grep -m1 -o "NCCL INFO [0-9]* coll channels" "$W/pass0/run1/nccl.log" 2>/dev/null | awk '{print $3}')
	log_cmd "$DPMLNCCL" fit -link "$LINK" -default-channels "${DCH:-0}" -table "$W/fit/table.json" -md "$W/fit/picks.md" -atlas "$W/fit/atlas.png" ${p0//,/ } ">" "$W/fit/builtin.json"
	# shellcheck disable=SC2086
	"$DPMLNCCL" fit -link "$LINK" -default-channels "${DCH:-0}" -table "$W/fit/table.json" -md "$W/fit/picks.md" -atlas "$W/fit/atlas.png" ${p0//,/ } > "$W/fit/builtin.json" &&
		cat "$W/fit/picks.md"
fi

# Pass 2: the plugin against NCCL's default, one process per label and
# round; the order rotates by one label per round, so that no label always
# runs first or last.
declare -A files
add() { files[$1]="${files[$1]:-}${files[$1]:+,}$2"; }
labels=()
for l in $PASS2; do
	case $l in
	default) ;;
	builtin | comm32 | preload | paired) [ -n "$PLUGIN" ] || continue ;;
	table | preload-table | paired-table) [ -n "$PLUGIN" ] && [ -s "$W/fit/table.json" ] || continue ;;
	*) echo "device.sh: PASS2: unknown label $l (skipped)"; continue ;;
	esac
	[ "$l" = comm32 ] && [ -n "${NO_COMM32:-}" ] && continue
	labels+=("$l")
done
tuner=(NCCL_TUNER_PLUGIN="$PLUGIN")
tab=(DPML_NCCL_TABLE="$W/fit/table.json")
for k in $(seq 1 "$ROUNDS"); do
	n=${#labels[@]}
	for j in $(seq 0 $(( n - 1 ))); do
		l=${labels[$(( (j + k - 1) % n ))]}
		d=$W/pass2/$l-$k
		case $l in
		default) sweep "$d" "$l-$k" nccl@dflt NCCL_TUNER_PLUGIN=none && add default "$d/sweep.csv" ;;
		builtin) sweep "$d" "$l-$k" plugin@dflt "${tuner[@]}" && add builtin "$d/sweep.csv" ;;
		table) sweep "$d" "$l-$k" plugin@dflt "${tuner[@]}" "${tab[@]}" && add table "$d/sweep.csv" ;;
		comm32) sweep "$d" "$l-$k" plugin@min32 "${tuner[@]}" && add comm32 "$d/sweep.csv" ;;
		preload) PRE=$PLUGIN sweep "$d" "$l-$k" plugin@dflt "${tuner[@]}" DPML_VERBOSE=1 && add preload "$d/sweep.csv" ;;
		preload-table) PRE=$PLUGIN sweep "$d" "$l-$k" plugin@dflt "${tuner[@]}" "${tab[@]}" DPML_VERBOSE=1 && add preload-table "$d/sweep.csv" ;;
		paired | paired-table)
			extra=()
			[ "$l" = paired-table ] && extra=("${tab[@]}")
			PRE=$PLUGIN sweep "$d" "$l-$k" nccl@dflt,plugin@dflt "${tuner[@]}" "${extra[@]}" DPML_VERBOSE=1 &&
				add "$l-default" "$d/sweep.csv#nccl@dflt" && add "$l-plugin" "$d/sweep.csv#plugin@dflt"
			;;
		esac
	done
done

# The floor on the other entry points: ncclCommInitRank and ncclCommInitAll.
if [ -n "$PLUGIN" ]; then
	for init in rank all; do
		ARGS="-colls allreduce -min 1M -max 4M -reps 1 -warmup 1 -rep-us 100 -init $init" PRE=$PLUGIN \
			sweep "$W/initcheck/$init" "initcheck-$init" plugin@dflt "${tuner[@]}" DPML_VERBOSE=1
	done
fi

# What NCCL set up and what the plugin said.
{
	echo "# NCCL's channels per communicator (\"N coll channels\": one line per GPU and communicator; pass 0 in the order of its variants)"
	for d in "$W"/pass0/run1 "$W"/pass2/default-1 "$W"/pass2/builtin-1 "$W"/pass2/comm32-1 "$W"/pass2/preload-1 \
		"$W"/pass2/preload-table-1 "$W"/pass2/paired-1 "$W"/initcheck/rank "$W"/initcheck/all; do
		[ -f "$d/nccl.log" ] || continue
		echo "## $(basename "$(dirname "$d")")/$(basename "$d")"
		grep -E "coll channels|minCTAs|TUNER|libdpml-nccl-tuner|Invalid config" "$d/nccl.log" | grep -v "^ncclsweep: communicators" | head -60
		grep -E "^ncclsweep: communicators" "$d/nccl.log"
	done
} > "$W/channels.txt" 2>&1
grep -E "coll channels|TUNER/dpml|Using dpml|libdpml-nccl-tuner: INFO" "$W/channels.txt" | sed -E 's/^.*NCCL INFO //' | sort | uniq -c | head -30

# Comparisons.
if [ -n "$DPMLNCCL" ] && [ -n "${files[default]:-}" ]; then
	args=(-run "default=${files[default]}")
	for l in builtin table comm32 preload preload-table; do
		[ -n "${files[$l]:-}" ] && args+=(-run "$l=${files[$l]}")
	done
	[ -n "$p0" ] && args+=(-forced "$p0")
	if [ "${#args[@]}" -gt 2 ]; then
		echo "== compare ($(elapsed)s)"
		log_cmd "$DPMLNCCL" compare "${args[@]}" -md "$W/compare.md"
		"$DPMLNCCL" compare "${args[@]}" -md "$W/compare.md" | grep " vs default: "
	fi
fi
if [ -n "$DPMLNCCL" ]; then
	: > "$W/compare-paired.md"
	for l in paired paired-table; do
		[ -n "${files[$l-default]:-}" ] || continue
		args=(-paired -run "default=${files[$l-default]}" -run "$l=${files[$l-plugin]}")
		[ -n "$p0" ] && args+=(-forced "$p0")
		echo "== compare $l ($(elapsed)s)"
		log_cmd "$DPMLNCCL" compare "${args[@]}" ">>" "$W/compare-paired.md"
		{ echo "## $l: NCCL alone and the preloaded plugin in one process"; echo; "$DPMLNCCL" compare "${args[@]}"; echo; } >> "$W/compare-paired.md"
		grep " vs default: " "$W/compare-paired.md" | tail -n 1
	done
	[ -s "$W/compare-paired.md" ] || rm -f "$W/compare-paired.md"
fi
[ -n "$skipped" ] && echo "== skipped for time:$skipped"
wrong=$(cat "$W"/pass*/*/sweep.csv "$W"/initcheck/*/sweep.csv 2>/dev/null | awk -F, '$1 ~ /^(allreduce|reducescatter|allgather)$/ && $18 != "0" { n++ } END { print n + 0 }')
echo "== rows with wrong results: $wrong"
[ "$wrong" = 0 ]
