#!/bin/bash
# Session 16, device call 7 (nvidia-h100-x1, 16 cores), build c. Which
# thread of a C rank with libdpml.so preloaded switches about 2000 times
# a second (gocall-cdpml: 0.005 context switches per call, half of them
# the main thread's)? gocall-c with libdpml.so, static tree (r=8), 4 B,
# one long measurement; rank 0's threads sampled twice, 1 s apart:
# name, voluntary and involuntary switches, the system call each sits
# in (202 futex, 35 nanosleep, 232 epoll_wait, 7 poll), its wait channel.
# Then the same with DPML_GOSCHED=off (no raised GOMAXPROCS, no pacing).
. $(dirname $0)/common.sh
L=$PWD/.devbin/c/libdpml.so
FX="-x DPML_TUNER=static -x DPML_INTRA=tree -x DPML_TREE_RADIX=8"
snap() { # snap TAG: rank 0's threads
  local pid=$(pgrep -f "gocall-c" | while read p; do [ "$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -c '^OMPI_COMM_WORLD_RANK=0$')" = 1 ] && echo $p; done | head -1)
  echo "== $1 pid $pid $(date +%s.%N)"
  for t in /proc/$pid/task/*; do
    echo "$(basename $t) $(cat $t/comm) $(grep ctxt $t/status | awk '{printf "%s ", $2}') sys=$(cut -d' ' -f1 $t/syscall) wchan=$(cat $t/wchan) stat=$(cut -d' ' -f3,14,15 $t/stat)"
  done
}
for g in auto off; do
  log "$ONE $FX -x DPML_GOSCHED=$g -x LD_PRELOAD=$L $GC -variants c -sizes 4 -reps 1 -time 6 -min-iters 5000000 -max-iters 5000000"
  $ONE $FX -x DPML_GOSCHED=$g -x LD_PRELOAD=$L $GC -variants c -sizes 4 -reps 1 -time 6 -min-iters 5000000 -max-iters 5000000 -label $g -header > $OUT/threads-$g.log 2>&1 &
  sleep 3; snap $g-a >> $OUT/threads-$g.txt 2>&1; sleep 1; snap $g-b >> $OUT/threads-$g.txt 2>&1
  wait
done
