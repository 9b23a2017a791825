#!/bin/bash
# Session 7, device call 1 (nvidia-h100-x1, 1x16): the hardware floor of a
# cache-line allreduce (bench/diag/floor), and the engine before (old =
# 696c9c3) and after (new = d060055: no line touched before a write, release
# stores, plan memo, kernel without the zeroed array): C client b2b with
# static plans, the gocall probe, and perf of a leaf and the root.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((540 - ($(date +%s) - T0))); }
{ date -u; nproc; lscpu | grep -i "model name"; cat .devbin/new/COMMIT .devbin/old/COMMIT; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
run() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  [ $(left) -lt 20 ] && { echo "skip $name" >> $OUT/commands.txt; return; }
  echo "+ $*" >> $OUT/commands.txt
  timeout $(( $(left) < to ? $(left) : to )) "$@" > $OUT/$name.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s ($name)" >> $OUT/commands.txt
}
run floor-1 60 $ONE .devbin/new/floor -rounds 5 -iters 20000
V="native,dpml:intra=tree,r=2,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=1,intra=shm,dpml:l=16,intra=shm"
S=4,8,16,32,64,128,256,512,1K,2K,4K,16K
for r in 1 2; do for lib in old new; do
  run c-$lib-$r 70 $ONE -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so .devbin/new/dpmlbench-c -pattern b2b -sizes $S -time 100ms -max-iters 20000 -check -quiet -variants $V -out $OUT/c-$lib-$r
done; done
for r in 1 2; do for lib in old new; do
  run gocall-$lib-$r 60 $ONE .devbin/$lib/gocall -variants go,go-dpml -sizes 4,8,64,512,4096 -reps 1 -label $lib -header
done; run gocall-c-$r 30 $ONE .devbin/new/gocall-c; done
run floor-2 60 $ONE .devbin/new/floor -rounds 5 -iters 20000
if command -v perf >/dev/null; then
  cat > /tmp/pw.sh <<'W'
#!/bin/sh
case "$OMPI_COMM_WORLD_RANK" in 0|5) exec perf record -F 15000 -g -o /tmp/perf-$OMPI_COMM_WORLD_RANK.data "$@";; esac
exec "$@"
W
  chmod +x /tmp/pw.sh
  run perf 60 $ONE -x LD_PRELOAD=$PWD/.devbin/new/libdpml.so /tmp/pw.sh .devbin/new/dpmlbench-c -pattern b2b -sizes 8 -time 3s -min-iters 200000 -max-iters 2000000 -quiet -variants dpml:intra=tree,r=4
  for r in 0 5; do perf report -i /tmp/perf-$r.data --stdio --no-children --percent-limit 0.5 -g none 2>/dev/null | grep "%" | head -60 > $OUT/perf-rank$r.txt; done
fi
cd $OUT/.. && tar czf run1.tgz $(basename $OUT)
