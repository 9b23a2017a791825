// Package tsc reads the processor's time stamp counter, where that is a
// clock: a few nanoseconds a read against a clock_gettime's 30-60 on the
// machines measured (a virtual machine's vDSO clock costs most). Package mpi
// gates its pacing on it (mpi/gosched.go): a read per MPI call tells whether
// the next yield may be due without the real clock.
//
// Usable says whether to trust it: amd64 only, and only where the kernel
// itself keeps time with it (current clocksource "tsc") or the processor
// declares it constant and non-stop (the constant_tsc and nonstop_tsc flags
// of /proc/cpuinfo). The counter's rate is unknown here: callers calibrate
// it against a real clock.
package tsc
