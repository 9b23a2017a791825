#!/bin/bash
# Session 10, device call 4 (nvidia-h100-x1, 16 cores): does a busy core
# slow another one down? The trace (run3) showed the engine's and the C
# wrapper's own code 3-4x slower inside a 16-rank run than alone on the
# device. bench/diag/floor/spin.c polls a private word (tight: loads only;
# pause: with PAUSE), work.c times a fixed pointer chase, cgonoop a C-to-Go
# call. All on core 3, with spinners on other cores.
OUT=$1; mkdir -p $OUT
B=.devbin/s10
log() { echo "+ $*" >> $OUT/commands.txt; }
{ date -u; nproc; lscpu | head -30; cat /sys/devices/system/cpu/cpu3/topology/thread_siblings_list; } > $OUT/machine.txt 2>&1
alone() { echo "work alone: $(taskset -c 3 $B/work 2000000)"; echo "cgonoop alone: $(LD_LIBRARY_PATH=$B taskset -c 3 $B/cgonoop | tail -1)"; }
with() { # with MODE CORES...
  local mode=$1; shift
  for c in "$@"; do taskset -c $c $B/spin $mode 3 & done
  sleep 0.2
  echo "work with $mode spinners on $*: $(taskset -c 3 $B/work 2000000)"
  echo "cgonoop with $mode spinners on $*: $(LD_LIBRARY_PATH=$B taskset -c 3 $B/cgonoop | tail -1)"
  wait
}
{
alone
for j in 0 1 2 4 5 6 7 8 9 10 11 12 13 14 15; do
  taskset -c $j $B/spin tight 0.6 & sleep 0.1
  echo "work with one tight spinner on $j: $(taskset -c 3 $B/work 2000000)"
  wait
done
alone
with tight 0 1 2 4 5 6 7 8 9 10 11 12 13 14 15
with pause 0 1 2 4 5 6 7 8 9 10 11 12 13 14 15
alone
with tight 0 1 2 4 5 6 7 8 9 10 11 12 13 14 15
with pause 0 1 2 4 5 6 7 8 9 10 11 12 13 14 15
} > $OUT/spin.txt 2>&1
