#!/bin/bash
# Session 6, device call 2 (nvidia-h100-x1, 1x16). A) the drop-in's per-call
# cost: a C loop with libdpml.so (static plans) under DPML_GOSCHED unset,
# procs, pace, auto, against the same loop from Go through dpml/; B) the
# tuner A/B: s7 (cost = last exit, links) vs s7 with DPML_TUNER_COST=mean
# vs s6 (mean exit, no links), C client, settled auto against fixed plans.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
{ date -u; cat .devbin/s7/COMMIT; lscpu | head -20; mpirun --version; cat /sys/devices/system/clocksource/clocksource0/current_clocksource; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader"
C="-reps 1 -sizes 4,8,64,512,4096 -time 0.3 -max-iters 200000"
L=$PWD/.devbin/s7/libdpml.so
for r in 1 2 3; do
  for v in c go unset procs pace auto; do
    case $v in
    c) cmd="$ONE .devbin/s7/gocall-c $C -label c -variants c" ;;
    go) cmd="$ONE -x DPML_TUNER=static .devbin/s7/gocall $C -label go -variants go,go-dpml" ;;
    unset) cmd="$ONE -x LD_PRELOAD=$L -x DPML_TUNER=static .devbin/s7/gocall-c $C -label cdpml -variants c" ;;
    *) cmd="$ONE -x LD_PRELOAD=$L -x DPML_TUNER=static -x DPML_GOSCHED=$v .devbin/s7/gocall-c $C -label cdpml-$v -variants c" ;;
    esac
    echo "+ $cmd" >> $OUT/commands.txt
    timeout 60 $cmd >> $OUT/gocall.csv 2>> $OUT/gocall.err
  done
done
echo "A done at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
S="4,64,256,1K,4K,16K,256K,4M"
for r in 1 2; do for pat in b2b skew; do for cfg in last mean old model; do
  [ $pat = skew ] && [ $r = 2 ] && continue
  [ $(left) -lt 40 ] && break
  case $cfg in
  last) lib=s7; env="" ;;
  mean) lib=s7; env="-x DPML_TUNER_COST=mean" ;;
  old) lib=s6; env="" ;;
  model) lib=s7; env="-x DPML_TUNER=model" ;;
  esac
  cmd="$ONE --mca btl_vader_single_copy_mechanism cma -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $env .devbin/s7/dpmlbench-c -pattern $pat -sizes $S -time 300ms -tune-calls 5000 -max-iters 20000 -check -quiet -variants $V -out $OUT/settle-$cfg-$pat-$r"
  echo "+ $cmd" >> $OUT/commands.txt
  timeout $(( $(left) < 90 ? $(left) : 90 )) $cmd > $OUT/settle-$cfg-$pat-$r.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
done; done; done
