#!/bin/bash
# Session 18, device call 3 (nvidia-h100-x1, 16 cores). Builds m
# (d1391f6) and n (2fd3ee2: the non-blocking calls, Wait, Test and Waitall
# without cgo's checks too). gocall clock (m, n) and gocall's go-iall
# (Iallreduce, then Test until done) and go loops, 3 launches each,
# alternating; the C twin's c-iall and c.
. $(dirname $0)/common.sh
SZ=4,16,64,256,1024,4096
for r in 1 2 3; do for b in m n; do
  run clock-$b-$r 30 $ONE .devbin/$b/gocall clock
done; done
for r in 1 2 3; do
  for b in m n; do run gocall-$b-$r 60 $ONE .devbin/$b/gocall -variants go,go-iall -sizes $SZ -settle calls:50ms -label $b-$r -header; done
  run gocall-c-$r 60 $ONE $GC -variants c,c-iall -sizes $SZ -label c-$r -header
done
clean
