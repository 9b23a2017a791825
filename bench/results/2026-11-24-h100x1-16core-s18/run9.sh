#!/bin/bash
# Session 18, device call 9 (nvidia-h100-x1, 16 cores). Issue 17 on 4x4
# with the final build q (e025490): dpmlbench (Go) against dpmlbench-c2
# with q's libdpml.so, dpmlrun -nodes 4 -ppn 4 -cores-per-node 4, b2b
# native,auto 4 B-64 KiB, 20000 tuning calls, 3 runs each alternating.
. $(dirname $0)/common.sh
C=.devbin/base/dpmlbench-c2
SM="-pattern b2b -sizes 4,16,64,256,1K,4K,16K,64K -time 100ms -max-iters 15000 -tune-calls 20000 -check -quiet -variants native,auto"
R4=".devbin/c/dpmlrun -nodes 4 -ppn 4 -cores-per-node 4"
for r in 1 2 3; do
  run c-4x4-b2bgo-$r 90 $R4 -preload $PWD/.devbin/q/libdpml.so -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- $C $SM -out $OUT/c-4x4-b2bgo-$r
  run goq-4x4-b2bgo-$r 90 $R4 -- --mca btl_vader_single_copy_mechanism cma -x DPML_NODE_SPLIT=host -x DPML_VERBOSE=1 -- .devbin/q/dpmlbench run $SM -plots=false -out $OUT/goq-4x4-b2bgo-$r
done
clean
