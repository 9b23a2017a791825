#!/bin/bash
# Session 7, device call 5 (nvidia-h100-x1, 1x16): old (696c9c3) vs new
# (d060055) vs new3 (+ prepared plans without defers, drop-in memo), C client
# b2b with fixed plans and auto (3000 settling calls), 4 B-64 KiB, 2 rounds
# interleaved; the Go API (gocall go-dpml, default plans) for the three.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((540 - ($(date +%s) - T0))); }
{ date -u; nproc; for d in old new new3; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && { echo "skip $name" >> $OUT/commands.txt; return; }
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=1,intra=shm,dpml:l=16,intra=shm"
S=4,8,16,32,64,128,256,512,1K,2K,4K,16K,64K
for r in 1 2; do for lib in old new new3; do
  run c-$lib-$r 90 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes $S -time 150ms -max-iters 30000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-$r
done; done
for r in 1 2; do for lib in old new new3; do
  run go-$lib-$r 40 $ONE .devbin/$lib/gocall -variants go-dpml -sizes 8,4,64,512,4096 -reps 2 -time 0.2 -min-iters 20000 -max-iters 50000 -label $lib
done; done
