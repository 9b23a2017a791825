#!/bin/bash
# Session 8, device call 3 (nvidia-h100-x1): the engine's per-call work
# (BenchmarkSmallPath: 265 ns here against 104 on the AMD build machine,
# r2) with Go CPU profiles, the simd build against a build without the
# simd experiment, and the simd build with GODEBUG=cpu.avx512f=off.
OUT=$1; mkdir -p $OUT
B="-test.run XXX -test.bench SmallPath -test.benchtime 1000000x -test.count 3"
echo "+ taskset -c 3 .devbin/dpml.test $B -test.cpuprofile simd.prof" >> $OUT/commands.txt
taskset -c 3 .devbin/dpml.test $B -test.cpuprofile $OUT/simd.prof > $OUT/simd.txt 2>&1
echo "+ taskset -c 3 .devbin/dpml-nosimd.test $B -test.cpuprofile nosimd.prof" >> $OUT/commands.txt
taskset -c 3 .devbin/dpml-nosimd.test $B -test.cpuprofile $OUT/nosimd.prof > $OUT/nosimd.txt 2>&1
echo "+ GODEBUG=cpu.avx512f=off taskset -c 3 .devbin/dpml.test $B" >> $OUT/commands.txt
GODEBUG=cpu.avx512f=off taskset -c 3 .devbin/dpml.test $B > $OUT/simd-noavx512.txt 2>&1
echo "+ taskset -c 3 .devbin/dpml.test -test.run XXX -test.bench 'Sum|Copy' -test.count 2" >> $OUT/commands.txt
taskset -c 3 .devbin/dpml.test -test.run XXX -test.bench 'Sum|Copy' -test.count 2 > $OUT/kernels.txt 2>&1
