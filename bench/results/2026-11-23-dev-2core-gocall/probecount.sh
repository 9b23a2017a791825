#!/bin/bash
# probecount.sh MODE VARIANT BYTES ITERS: runtime events per 1000 calls per rank
m=$1 v=$2 b=$3 n=$4
out=$(DPML_GOSCHED=$m perf stat -x, -e 'probe_gocall:*' -- mpirun --allow-run-as-root -np 2 --bind-to core --map-by core --mca btl self,vader -x DPML_GOSCHED /work/wt-gompi/bin/gocall -reps 1 -sizes $b -variants $v -min-iters $n -max-iters $n 2>&1)
line=$(echo "$out" | grep "^go,")
us=$(echo "$line" | cut -d, -f9) cs=$(echo "$line" | cut -d, -f12)
echo -n "$m $v $b us=$us cs=$cs "
echo "$out" | grep probe_gocall | awk -F, -v n=$n '{split($3,a,":"); printf "%s=%.2f ", a[2], $1/(2*n)*1000}'
echo
