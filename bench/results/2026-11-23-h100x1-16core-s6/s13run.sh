#!/bin/bash
# Session 6, device call 8 (nvidia-h100-x1, 1x16): issue 17's first-size
# transient. bench/diag/gocall (Go via mpi/, HEAD) and its C twin with the
# sizes in two orders (4 first; 8 first and 4 again last), 3 rounds, with
# rank 0's threads (-threads) for the Go runs.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((200 - ($(date +%s) - T0))); }
date -u > $OUT/machine.txt
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader"
for r in 1 2 3; do for order in a b; do for v in c go; do
  [ $(left) -lt 15 ] && break
  S="4,8,64,512,4096"; [ $order = b ] && S="8,64,512,4096,4"
  case $v in
  c) cmd="$ONE .devbin/s13/gocall-c -reps 1 -sizes $S -time 0.3 -max-iters 200000 -label $order -variants c" ;;
  go) cmd="$ONE -x DPML_TUNER=static .devbin/s13/gocall -reps 1 -sizes $S -time 0.3 -max-iters 200000 -label $order -variants go -threads" ;;
  esac
  echo "+ $cmd" >> $OUT/commands.txt
  timeout 40 $cmd >> $OUT/gocall.csv 2>> $OUT/threads-$order.txt
done; done; done
