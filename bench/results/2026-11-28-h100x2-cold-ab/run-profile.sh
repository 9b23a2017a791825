#!/bin/bash
# machine profile cold run vs best fixed plans, 1x32
set -u
O=/tmp/w; rm -rf $O; mkdir -p $O
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nproc; nvidia-smi -L | head -1
BUDGET=${B1:-300} LAYOUTS="1x32" LAUNCHES=0 PROBE=0 PROFILE=1 FIXED=1 bash bench/cold/device.sh $O/pf .devbin/baee261
cp $O/pf/cold.tar.xz $OUT/profile.tar.xz
cd $O && tar xJf pf/cold.tar.xz && grep -h "rc=\|skipped" r/commands.txt | tail -8
