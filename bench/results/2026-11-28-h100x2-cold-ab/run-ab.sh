#!/bin/bash
# A/B: 6ce6806 vs 2f7bcf9, 1x32 and 4x8, cold100 bar100 cold10, 2 launches, books; + percall 1x32 auto x2
set -u
O=/tmp/w; rm -rf $O; mkdir -p $O
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L | head -2; nproc
BUDGET=${B1:-480} LAYOUTS="1x32 4x8" LAUNCHES=2 WARM=1 PROBE=0 PROFILE=0 FIXED=0 AUTOENV="DPML_VERBOSE=1" OLDENV="DPML_VERBOSE=1" bash bench/cold/device.sh $O/ab .devbin/6ce6806 .devbin/2f7bcf9
cp $O/ab/cold.tar.xz $OUT/ab.tar.xz
cd $O && tar xJf ab/cold.tar.xz && grep -h "rc=\|skipped" r/commands.txt | tail -3
cd - >/dev/null
mpicc -O2 -o /tmp/percall bench/results/2026-11-28-h100x2-cold-ab/percall.c
M="mpirun --allow-run-as-root --bind-to core --map-by core -np 32 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
R=$OUT/percall.txt; : > $R
for rep in 1 2; do for b in 6ce6806 2f7bcf9; do
  echo "== $b rep $rep" >> $R
  timeout 60 $M -x LD_PRELOAD=$PWD/.devbin/$b/libdpml.so -x DPML_VERBOSE=1 -x DPML_PROFILE_DIR=/tmp/prof-$b-$rep /tmp/percall >> $R 2>/tmp/err.txt
  grep -h "dpml: [0-9]* B:" /tmp/err.txt | cut -c1-200 >> $R
done; done
grep -h "mean" $R | cut -c1-30
