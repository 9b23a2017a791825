# Sourced by the run scripts of session 17 on nvidia-h200-x2 (32 cores,
# one socket, Open MPI 4.1.6). Binaries travel xz-compressed in .devbin.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((${BUDGET:-540} - ($(date +%s) - T0))); }
for f in .devbin/*/*.xz; do [ -e "$f" ] && xz -dkf $f; done; chmod +x .devbin/*/* 2>/dev/null
C=.devbin/base/dpmlbench-c2; GC=.devbin/base/gocall-c
{ date -u; nproc; lscpu | head -20; cat /sys/devices/system/clocksource/clocksource0/current_clocksource; for d in .devbin/*/COMMIT; do echo "$d: $(cat $d)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 32 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
run() { # run NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  [ $(left) -lt $((to / 2)) ] && { echo "skipped $name ($(left) s left)" >> $OUT/commands.txt; return; }
  log "$*"
  timeout $to "$@" > $OUT/$name.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 )) ($name)" >> $OUT/commands.txt
}
clean() { for f in $OUT/*.log; do grep -v "^libdpml:   DPML_\|^DPML_" $f > $f.t && mv $f.t $f; done; rm -f $OUT/*/results.csv; }
