#!/usr/bin/env bash
# Backtraces of the ranks of a hung emulated-cluster job (for the device,
# where gdb is missing but cuda-gdb debugs host code): starts the job, waits
# SECONDS, then prints every thread's stack of each rank still running.
# Usage: bench/diag/stacks.sh SECONDS dpmlrun-args... -- prog args...
set -u
wait_s=${1:?seconds}; shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bin/dpmlrun "$@" &
job=$!
sleep "$wait_s"
prog=$(printf '%s\n' "$@" | sed -n '/^--$/{n;p}' | tail -1)
gdb=$(command -v gdb || command -v cuda-gdb)
name=$(basename "$prog" | cut -c1-15)
for pid in $(pgrep -x "$name"); do
  echo "=== pid $pid on $(nsenter -t "$pid" -u hostname 2>/dev/null): $(tr '\0' ' ' </proc/$pid/cmdline | cut -c1-100)"
  timeout 60 "$gdb" -p "$pid" -batch -ex "thread apply all bt 30" 2>&1 | grep -E "^#|^Thread" | head -80
done
kill -- -"$job" 2>/dev/null; kill "$job" 2>/dev/null
wait "$job" 2>/dev/null
