// Package gosched keeps the Go scheduler off a core-bound MPI rank's core
// (DPML_GOSCHED): Apply turns on pacing (every MPI call of package mpi
// that may wait first calls Pace, through mpi.SetWaitHook) and raises
// GOMAXPROCS 1 to 2; dpml.New and libdpml.so call it. Package mpi itself
// is a binding only and knows nothing of this.
//
// An MPI rank bound to one core (mpirun --bind-to core) that calls MPI from
// Go paid about 4x the latency of a C program for a small MPI_Allreduce on
// a 32-core node (14-15 us against 3.45 us, 8 bytes, 1x32).
// The cause is the Go runtime's monitor thread (sysmon) and one rule of its
// retake, in Go 1.26 (runtime/proc.go):
//
//  1. The goroutine that calls MPI is locked to its thread and never
//     rescheduled, so its P's scheduling tick (schedtick) never changes.
//  2. Each sysmon tick, retake finds that tick older than forcePreemptNS
//     (10 ms) and calls preemptone, which does nothing to a goroutine in a
//     system call, and a cgo call is one; retake then takes the P anyway
//     (sysretake: it skips the "in this call for one tick only" check, and
//     the exemption for an idle P lapses 10 ms after the last ordinary
//     tick, since forced ticks do not renew it) and hands it off: handoffp
//     wakes another thread, on the rank's only core.
//  3. retake returned 1, so sysmon sleeps 20 us (about 100 us with timer
//     slack) instead of backing off towards 10 ms.
//  4. The MPI call returns without its P, takes the idle P back
//     (exitsyscall's slow path) and carries on, still not rescheduled: the
//     next tick does it all again. The storm ends only when a tick finds
//     the goroutine in Go code, where preemptone does preempt it; an MPI
//     loop spends most of its time in C, so that takes many ticks.
//
// Every wake-up of sysmon or of the handed-off thread takes the core from
// the rank while it busy-polls inside MPI, and in a collective every rank
// waits for the one delayed: 32 ranks, each disturbed thousands of times a
// second, make most calls late. This also explains the other measurements: GODEBUG=asyncpreemptoff and GOGC=off do not touch it; GOMAXPROCS
// 4 only delays each storm (step 2's exemption); the whole loop in one C
// call ends in a P that stays idle, and sysmon then sleeps deeply; with two
// cores per rank the wake-ups land on the other core; a C program has no
// such goroutine, but the drop-in library inside one does: the C thread's
// callbacks into Go run on one extra M that the runtime sees in a system
// call between them.
//
// Evidence, on the 2-core development machine (Debian 12, Go 1.26.8, Open
// MPI 4.1.4; 2 ranks, mpirun -np 2 --bind-to core --map-by core, under
// other users' load), with bench/diag/gocall (bin/gocall and its C twin
// bin/gocall-c), per 1000 calls per rank (docs/results.md says where the
// data are):
//
//   - uprobes on the runtime (perf probe -x bin/gocall runtime.preemptone
//     and so on, perf stat; 3 runs), 8-byte allreduce: before
//     (DPML_GOSCHED=off) 2.0-2.7 preemptone, 2.1-2.8 handoffp, 2.0-2.7
//     calls returning without their P, 7.0-9.2 sysmon ticks; after (auto)
//     0.02-0.05, 0.20-0.26 (the yields' own hand-offs, below), 0.01-0.02
//     and 0.47-0.66. A 3 us busy wait in C called from Go, no MPI (variant
//     go-spin): before 9.9-16.5 preemptone and 15.9-18.6 ticks, after
//     0.02-0.07 and 0.90-1.17: the storm is the runtime's alone.
//   - perf sched timehist of a rank before: sysmon wakes every 0.1 ms for
//     50 ticks, backs off (0.16, 0.24, 0.40, 0.73, 1.37, 2.65 ms), then
//     hands the P off at every tick for a while, every 11.5-11.7 ms.
//   - Per-thread counters (gocall -threads, /proc/self/task; 2 runs): the
//     sysmon thread switched 3.4-8.3 times and used 52-130 us of CPU
//     before, 0.6-0.7 times and 10-12 us after; the MPI thread was
//     preempted 3.0-6.9 times before, 0.8-1.0 after.
//   - Time per call of the 3 us busy wait, fastest of 6 rounds: C 3.22 us,
//     Go before 4.95 (1.54x), after 3.33 (1.04x), GOMAXPROCS 2 alone 4.59.
//     The measurement on a real node (bench/diag/gocall.sh: 1x32 and 4x8,
//     4 B to 4 KiB, before and after in the same run) is the decisive one.
//
// In libdpml.so, auto stops pacing (Unpace) once internal/runtime/idlethreads has
// moved the runtime's own threads to SCHED_IDLE: the storms then wake
// only threads that run when the rank leaves its core idle, and the
// yield itself, two thread switches for a callback's locked goroutine,
// was the whole of the first call after a pause.
//
// The fix, applied by dpml.New and by the drop-in library (Apply), set by
// DPML_GOSCHED (auto, the default:
// both; pace; procs; off: neither, as before). In the drop-in it was
// measured on a 16-core node (1x16, bench/diag/gocall's C loop with
// libdpml.so preloaded and static plans, 3 rounds, medians): 8 B 3.18 us unset against 2.67 with auto (C without the library:
// 3.81); 4 KiB 14.99 against 13.08; the first size measured after start
// (4 B) 5.16 against 2.61, with 0.068 against 0.002 context switches per
// call. Pace alone did most of it; procs alone little.
//
//   - pace: every MPI call that can wait (collectives, point-to-point,
//     Wait, Test, Waitall, Barrier, communicator creation, Wtime) first
//     calls Pace, which yields the goroutine (runtime.Gosched) when
//     PaceEvery (5 ms, half of forcePreemptNS) has passed since the last
//     yield. The schedtick then never goes stale, no storm starts, and
//     sysmon backs off to 10 ms sleeps. A locked goroutine's yield costs two
//     thread switches (the runtime hands its P to another thread, which
//     hands it back); otherwise a read of the time stamp counter, which
//     tells whether the next slot boundary has passed (gosched.go, the
//     counter gate; the clock every few calls where the counter is no
//     clock). Blocking semantics are
//     unchanged: Pace runs before the MPI call, in Go. The engine's
//     shared-memory waits pace too (package dpml). Concurrent callers
//     (ThreadMultiple) share one clock: each yields when it finds the
//     interval passed; a loop of your own cgo calls can call Pace.
//   - procs: Apply raises GOMAXPROCS from 1 to 2 (unless GOMAXPROCS is set
//     in the environment). With an idle P, retake leaves a P in a short
//     cgo call alone; with one P it takes it from any call that spans two
//     ticks, which a 32-rank collective does whenever one rank is late.
//     The second P runs nothing unless the program has other goroutines
//     (a garbage collection's idle mark worker may use it).
//
// What remains (a 16-core node, 1x16, bench/diag/gocall against its C
// twin, at thread level single and DPML_GOSCHED=auto):
//   - Go/C is 1.01-1.32x at 4 B to 4 KiB, most sizes 1.1-1.2x. A Go rank
//     still sees 0.0035-0.006 context switches per call, against none for
//     C: the pace yields and sysmon's 10 ms ticks.
//   - Whichever size a process measures first pays 1.25-1.35x, with 2-3
//     times the later context switches. Reordering the sizes moves this
//     transient with them. It is not the background scavenger:
//     debug.FreeOSMemory after Init made it no smaller. It belongs to the
//     time since start (gocall -settle, 3 rounds, medians, 8 B measured
//     first): with
//     nothing before it the first 8 B took 1.59x the C loop, with 0.0163
//     context switches per call; after 50 ms of 8-byte allreduces
//     (-settle calls:50ms) 1.12x with 0.0040, the steady rate; after a
//     50 ms time.Sleep (-settle sleep:50ms) 1.16x with 0.0101. That fits
//     the monitor's own rule (step 3 above, and sysmon's deep sleep): a
//     cgo call of more than 10 ms (MPI_Init, a barrier waiting for ranks
//     still starting) loses its P, or an idle process's first cgo call
//     wakes the sleeping monitor; either restarts its 20 us ticks, which
//     take about 20 ms to back off to 10 ms, and a sleep ends in such a
//     wake-up. The package applies no start-up delay for it: a program
//     pays it once, for a few tens of milliseconds, where a settle in
//     Init would cost every program 50 ms; a benchmark measures after a
//     settle of its own. It comes back after any single MPI call longer
//     than 10 ms.
//   - The steady rate is the pace yields and the monitor's 10 ms ticks:
//     about 0.004 context switches per call per rank at 4-512 B (about
//     1000 a second, against 0.0001 for C), each delaying the collective
//     for every rank. A locked goroutine's yield hands its P to another
//     thread and back (two thread wake-ups); yielding unlocked would be
//     one switch fewer but lets another thread take the goroutine, and
//     with it the MPI calls (not allowed below ThreadMultiple).
//   - On the same 16-core node (1x16, gocall against its C twin): a clock
//     read costs a Go rank 60-67 ns there and an empty cgo call 56-62 ns
//     (gocall clock), against 1.3-1.5 us for a whole 4-byte dpml call. Pace
//     reads the clock every few calls (paceGap), and its yields fall on a
//     wall-clock grid shared by the processes, so the ranks of a node
//     yield in the same call instead of each delaying the collective at
//     its own time. The grid left the context switches per call as they
//     were (0.004 with mpi.Allreduce, 0.0015 with dpml.Allreduce) and the
//     times within the noise at 4-16 B; with the gated clock read and the
//     Go clearance's direct fused call, dpml.Allreduce from Go ran 3-13%
//     faster, and Go/C was 1.13-1.17 for mpi.Allreduce and 1.05-1.13 for
//     dpml.Allreduce (libdpml.so in the C loop) at 4 B-256 B, in one
//     call of alternating launches; a later, slower call of the same
//     machine gave up to 1.39 and 1.30.
//
// Alternatives weighed and rejected: waiting in Go code (Iallreduce, then
// Test in a loop) runs Open MPI's non-blocking collectives (libnbc), slower
// than the blocking ones even from C (2 ranks here: 2.1x at 8 B, 3.6x at
// 4 KiB, fastest of 5), and is still many short cgo calls (14.7 us on the
// 32-core node); calling C without the system-call
// hand-off (runtime.asmcgocall through go:linkname) links in Go 1.26 only
// through cmd/link's exemption for ABI wrappers (marked TODO there), and a
// blocking MPI call would then hold off every stop-the-world for as long
// as it waits: a goroutine in MPI_Recv waiting for another goroutine's
// MPI_Send (ThreadMultiple) would deadlock the process at the next
// collection. GOMAXPROCS 2 alone leaves the storms (procs: 0.6-0.9
// preemptone per 1000 calls, go-spin 9.7-14.8).
package gosched
