# Sourced by run3.sh (and later issue-16 scripts) after common.sh: the
# issue-16 runs of run1.sh and run2.sh (which ran with these lines inline,
# and stay as they ran) as one definition. The C client $C with a build's
# libdpml.so; auto against fixed plans and the MPI library, 4 B-64 KiB,
# 20000 tuning calls; 1x32 via $ONE, 4x8 via dpmlrun's emulated nodes.
R8=${R8:-".devbin/s/dpmlrun -nodes 4 -ppn 8 -cores-per-node 8"}
R8A="--mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host"
V="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:intra=tree,r=16,dpml:l=8,intra=shm,dpml:l=16,intra=shm,dpml:l=32,intra=shm"
S="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V"
V4="native,auto,dpml:intra=tree,r=4,dpml:intra=tree,r=8,dpml:l=2,intra=shm,dpml:l=4,intra=shm,dpml:l=8,intra=shm,dpml:l=4,intra=tree,r=4"
S4="-sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 10000 -tune-calls 20000 -check -quiet -variants $V4"
one() { # one BUILD LAYOUT PATTERN TAG TIMEOUT ARGS...: output c-BUILD-LAYOUT-PATTERN-TAG
  local b=$1 lay=$2 pat=$3 tag=$4 to=$5; shift 5
  local name=c-$b-$lay-$pat-$tag L=$PWD/.devbin/$b/libdpml.so
  if [ $lay = 1x32 ]; then
    run $name $to $ONE -x DPML_VERBOSE=1 -x LD_PRELOAD=$L $C -pattern $pat "$@" -out $OUT/$name
  else
    run $name $to $R8 -preload $L -- $R8A -x DPML_VERBOSE=1 -- $C -pattern $pat "$@" -out $OUT/$name
  fi
}
