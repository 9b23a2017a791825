// Package idlethreads moves the Go runtime's own threads of a library
// loaded into a C program (libdpml.so) to the SCHED_IDLE policy, so that
// their wake-ups never take a core-bound rank's core from it.
//
// Why: inside a C MPI program, the library's Go code runs in callbacks on
// the program's thread, and between callbacks the runtime sees that thread
// in a long system call. Ten milliseconds after the last callback the
// runtime's monitor thread (sysmon) takes the thread's P away and, finding
// every P idle, sleeps deeply. The next callback wakes it with its tick
// reset to 20 us, and the P the callback returns to C with keeps it awake:
// it wakes about every 0.1 ms (timer slack included) for 50 ticks, then
// backs off over about 20 ms. Each wake-up preempts the rank's thread while
// it busy-polls in a collective, and in a collective every rank waits for
// the one delayed. On a 32-core node (1x32, 4-byte MPI_Allreduce through
// the library's C fast path) the first 300-1,000 calls after any pause of
// more than 10 ms, sleeping or busy, ran at 10-20 us instead of 1.6 us; a
// pause of 5 ms, or none, showed nothing. GOMAXPROCS 1 shortens that storm
// but starts another at every callback that returns to a long C call
// (package internal/runtime/gosched).
//
// A SCHED_IDLE thread never preempts a thread of a normal policy when it
// wakes: it runs when the rank gives its core away (a yield, a sleep) or
// for a few microseconds per scheduler period. That alone is not enough:
// a rank that yields after a few microseconds of polling gives those
// threads its core in the middle of a collective, which delays its next
// arrival, which makes its peers yield in turn. libdpml.so therefore also
// has ranks that own their cores poll longer before yielding
// (internal/runtime/dropinhook.OwnCoreSpin). On the device above, 4-byte calls
// after a 50 ms pause ran at 2.4-4 us with both, 9-13 us with either one
// alone or neither. The program's own threads, the MPI library's and the
// thread that calls in are left alone.
//
// Which threads are the runtime's: Demote takes a thread whose last system
// call was made from the library's own code (its program counter, read
// from /proc/self/task/TID/syscall, lies in an executable mapping of the
// file that holds this package's code). The runtime makes its system calls
// itself, not through the C library, and its idle threads sleep in them
// (futex, nanosleep); the program's and the MPI library's threads block in
// the C library. A runtime thread that happens to be running is not seen:
// Demote is called again at later points, and the threads the runtime
// creates later are started by its template thread, whose policy they
// inherit.
package idlethreads
