#!/bin/bash
# Session 8, device call 4 (nvidia-h100-x1, 1x16): new2 (8999a8e plus the
# learner's drift reference and stride, and the whole-set search of small
# arm sets; committed after this run) against base (45d5530), the same
# client (base's dpmlbench-c), interleaved:
#  A. b2b 4 B-16 KiB, 4 runs per build.
#  B. skew (each rank computes 0-20 us before each call), 1 run per build.
#  C. DPML_VERBOSE=1 tuner tables, b2b 8 B, 256 B, 2 KiB, 1 run each.
OUT=$1; mkdir -p $OUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((560 - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; cat /sys/devices/system/clocksource/clocksource0/current_clocksource /sys/devices/system/clocksource/clocksource0/available_clocksource; for d in base new2; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 16 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=1,intra=shm,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=16,intra=shm"
one() { # one BUILD PATTERN TAG ARGS...
  local lib=$1 pat=$2 tag=$3; shift 3
  [ $(left) -lt 50 ] && { echo "skipped $lib $pat $tag" >> $OUT/commands.txt; return; }
  log "$ONE $X -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $V -out $OUT/c-$lib-$pat-$tag"
  timeout 70 $ONE $X -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $V -out $OUT/c-$lib-$pat-$tag > $OUT/c-$lib-$pat-$tag.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
X=""
for r in 1 2 3 4; do for lib in base new2; do
  one $lib b2b $r -sizes 4,8,32,64,256,1K,2K,4K,16K -time 100ms -max-iters 15000 -tune-calls 3000
done; done
for lib in base new2; do
  one $lib skew 1 -sizes 4,8,64,512,4K,16K -time 100ms -max-iters 4000 -tune-calls 3000
done
X="-x DPML_VERBOSE=1"
for lib in base new2; do
  one $lib b2b v -sizes 8,256,2K -time 100ms -max-iters 15000 -tune-calls 3000
done
