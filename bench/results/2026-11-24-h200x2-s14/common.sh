# Sourced by h1.sh and h2.sh (session 14, nvidia-h200-x2: 32 cores, one
# socket, Open MPI 4.1.6). one(): a C-client run (dpmlbench-c, libdpml.so
# preloaded) on 1x32 (mpirun --bind-to core) or 4x8 (dpmlrun's emulated
# nodes); auto, fixed plans and the MPI library in the same run,
# interleaved per size. Builds: s14 (4f2db27, the session's start) and s14f
# (9145207: a settled key's stride has a floor).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s); left() { echo $((${BUDGET:-560} - ($(date +%s) - T0))); }
C=.devbin/base/dpmlbench-c
{ date -u; nproc; lscpu | head -20; for d in s14 s14f; do echo "$d: $(cat .devbin/$d/COMMIT)"; done; } > $OUT/machine.txt 2>&1
ONE="mpirun --allow-run-as-root -np 32 --bind-to core --map-by core --mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
log() { echo "+ $*" >> $OUT/commands.txt; }
V1="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=32,intra=shm"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=8,intra=shm,dpml:l=4,intra=tree,r=8"
S="-sizes 4,8,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 10000"
one() { # one BUILD LAYOUT PATTERN TAG TIMEOUT VARIANTS ARGS...
  local lib=$1 lay=$2 pat=$3 tag=$4 to=$5 v=$6; shift 6
  [ $(left) -lt $((to / 2)) ] && { echo "skipped $lib $lay $pat $tag ($(left) s left)" >> $OUT/commands.txt; return; }
  local name=c-$lib-$lay-$pat-$tag
  if [ $lay = 1x32 ]; then
    log "$ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=.devbin/$lib/libdpml.so $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$PWD/.devbin/$lib/libdpml.so $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  else
    log ".devbin/s9/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8 -preload .devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat $* -check -quiet -variants $v -out $OUT/$name"
    timeout $to .devbin/s9/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8 -preload $PWD/.devbin/$lib/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -check -quiet -variants $v -out $OUT/$name > $OUT/$name.log 2>&1
  fi
  echo "rc=$? at $(( $(date +%s) - T0 ))" >> $OUT/commands.txt
}
