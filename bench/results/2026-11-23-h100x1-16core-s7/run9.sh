#!/bin/bash
# Session 7, device call 9 (nvidia-h100-x1, 1x16): the session's end state.
# old = 696c9c3 (session start), final = HEAD. C client (dpmlbench-c,
# libdpml.so preloaded, default settings for auto): b2b 4 B-4 MiB, 2 runs
# per build interleaved; skew (S = 20 us) 4 B-64 KiB, 1 run per build; the
# gocall probe (Go via mpi/ and dpml/, and its C twin), 2 rounds.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
{ date -u; nproc; for d in old final; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && { echo "skip $name" >> $OUT/commands.txt; return; }
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=16,intra=shm"
for r in 1 2; do for lib in old final; do
  run c-$lib-b2b-$r 110 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/final/dpmlbench-c -pattern b2b -sizes 4,8,16,32,64,128,256,512,1K,2K,4K,16K,64K,256K,1M,4M -time 120ms -max-iters 20000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-b2b-$r
done; done
for lib in old final; do
  run c-$lib-skew-1 80 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/final/dpmlbench-c -pattern skew -sizes 4,8,64,512,4K,64K -time 150ms -max-iters 5000 -tune-calls 3000 -check -quiet -variants $V -out $OUT/c-$lib-skew-1
done
for r in 1 2; do
  for lib in old final; do run gocall-$lib-$r 40 $ONE .devbin/$lib/gocall -variants go,go-dpml -sizes 4,8,64,512,4096 -reps 1 -label $lib -header; done
  run gocall-c-$r 30 $ONE .devbin/final/gocall-c -variants c -sizes 4,8,64,512,4096 -reps 1 -header
done
