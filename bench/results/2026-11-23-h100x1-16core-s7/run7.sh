#!/bin/bash
# Session 7, device call 7 (nvidia-h100-x1, 1x16): Go CPU profiles of every
# rank (DPML_CPUPROFILE) for the C client, b2b, tree r=4 at 8 B and l=16
# copies at 1 KiB, 2 s each.
OUT=$1; mkdir -p $OUT/prof
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; nproc; cat .devbin/new5/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
for v in "8 dpml:intra=tree,r=4" "1K dpml:l=16,intra=shm" "8 auto"; do set -- $v
  tag=$1-${2//[:=,]/_}
  echo "+ $ONE -x DPML_CPUPROFILE=$OUT/prof/$tag-%r.pprof -x LD_PRELOAD=.devbin/new5/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes $1 -time 2s -min-iters 500000 -max-iters 1000000 -tune-calls 3000 -quiet -variants $2" >> $OUT/commands.txt
  timeout 60 $ONE -x DPML_CPUPROFILE=$OUT/prof/$tag-%r.pprof -x LD_PRELOAD=$PWD/.devbin/new5/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes $1 -time 2s -min-iters 500000 -max-iters 1000000 -tune-calls 3000 -quiet -variants $2 > $OUT/$tag.log 2>&1; echo "rc=$?" >> $OUT/commands.txt
done
cp .devbin/new5/libdpml.so $OUT/
