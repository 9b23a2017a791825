// Command plugin is libdpml-nccl-tuner.so, DPML's NCCL tuner plugin:
//
//	go build -buildmode=c-shared -o bin/libdpml-nccl-tuner.so ./nccl/plugin   (make build does it)
//	LD_PRELOAD=$PWD/bin/libdpml-nccl-tuner.so NCCL_TUNER_PLUGIN=$PWD/bin/libdpml-nccl-tuner.so ./app
//
// plugin.c defines the symbols NCCL looks up (ncclTunerPlugin_v7 and _v6
// for the newest NCCL headers, _v5 for NCCL 2.28, _v4 for 2.24-2.27), the
// machine detection (NVML by dlopen) and the per-call path, in C;
// export.go holds the calls into Go: dpmlNcclFill at each communicator's
// init, which computes the communicator's answers with package nccl, and
// dpmlNcclFloor, which decides a communicator's channel floor. floor.c
// acts only when the library is preloaded: NCCL fixes a communicator's
// channels before it loads the tuner and caps every answer at them, so
// floor.c defines NCCL's communicator-creation functions and calls NCCL's
// with minCTAs set to the floor (DPML_NCCL_FLOOR; never over the caller's
// own channel settings). The ABI declarations are dpml_nccl_tuner.h's
// (NCCL release 2.28.3's layouts). Design, settings, costs and limits:
// package nccl's documentation ("The channel floor").
//
// The tests build the library as make build does and drive it from C
// (testdata/tunertest.c), preload it into testdata/floortest.c on the
// fake NCCL built as libnccl.so, and run the sweep tool (cmd/ncclsweep)
// and bench/nccl/device.sh against fake CUDA and NCCL (testdata/fake).
package main
