#!/bin/bash
# Session 6 device batch (nvidia-h100-x1, 1x16): A) gocall old (1fe178b) vs new
# (Init at MPI_THREAD_SINGLE), rounds interleaved; B) tuner statistic A/B
# (DPML_TUNER_STAT/SAMPLES) with the C client, settled auto vs fixed plans.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((550 - ($(date +%s) - T0))); }
{ date -u; lscpu | head -20; mpirun --version; .devbin/s6/gocall version; .devbin/s6old/gocall version; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader"
C="-reps 1 -sizes 4,8,64,512,4096 -time 0.3 -max-iters 200000"
for r in 1 2 3; do
  for v in c old new cdpml; do
    [ $(left) -lt 300 ] && break
    case $v in
    c) cmd="$ONE .devbin/s6/gocall-c $C -label 1x16 -variants c" ;;
    old) cmd="$ONE -x DPML_TUNER=static .devbin/s6old/gocall $C -label 1x16-old -variants go,go-dpml" ;;
    new) cmd="$ONE -x DPML_TUNER=static .devbin/s6/gocall $C -label 1x16-new -variants go,go-dpml" ;;
    cdpml) cmd="$ONE -x LD_PRELOAD=$PWD/.devbin/s6/libdpml.so -x DPML_TUNER=static .devbin/s6/gocall-c $C -label 1x16-cdpml -variants c" ;;
    esac
    echo "+ $cmd" >> $OUT/commands.txt
    timeout 60 $cmd >> $OUT/gocall.csv 2>> $OUT/gocall.err
  done
done
echo "A done at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
for r in 1 2; do for cfg in min3 trimmed8 median8 min8; do
  [ $(left) -lt 40 ] && break
  case $cfg in min3) st=min; n=3;; trimmed8) st=trimmed; n=8;; median8) st=median; n=8;; min8) st=min; n=8;; esac
  cmd="$ONE --mca btl_vader_single_copy_mechanism cma -x LD_PRELOAD=$PWD/.devbin/s6/libdpml.so -x DPML_TUNER_STAT=$st -x DPML_TUNER_SAMPLES=$n .devbin/s6/dpmlbench-c -pattern b2b -sizes 4,64,1K,16K -time 300ms -tune-calls 5000 -max-iters 20000 -check -quiet -variants $V -out $OUT/st-$cfg-$r"
  echo "+ $cmd" >> $OUT/commands.txt
  timeout $(( $(left) < 60 ? $(left) : 60 )) $cmd > $OUT/st-$cfg-$r.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/commands.txt
done; done
