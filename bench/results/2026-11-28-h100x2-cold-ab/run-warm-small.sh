#!/bin/bash
# warm 1x32 small sizes: 936dc63 vs baee261 vs 2f7bcf9, 3 launches, order rotated
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for d in .devbin/936dc63 .devbin/baee261 .devbin/2f7bcf9; do for f in $d/*.xz; do xz -dkf $f; done; chmod +x $d/*; done
M="mpirun --allow-run-as-root --bind-to core --map-by core -np 32 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
R=$OUT/warm.txt; : > $R
order=(936dc63 baee261 2f7bcf9)
for rep in 1 2 3; do
  for j in 0 1 2; do b=${order[$(( (j+rep) % 3 ))]}
    echo "== $b rep $rep" >> $R
    timeout 60 $M -x LD_PRELOAD=$PWD/.devbin/$b/libdpml.so -x DPML_PROFILE_DIR=/tmp/pw-$b-$rep .devbin/2f7bcf9/dpmlbench-c -pattern b2b -sizes 4:16K:x4 -time 30ms -max-iters 2000 -tune-calls 2000 -check -quiet -variants native,auto -out /tmp/ww-$b-$rep >> $R 2>&1
  done
done
awk '/^==/{h=$2" "$4} $2=="auto"{print h, $1, $6, $NF, $(NF-2)}' $R
