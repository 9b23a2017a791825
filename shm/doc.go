// Package shm provides the node-level shared memory of the DPML engine:
// named POSIX shared-memory segments (files in /dev/shm mapped shared by
// every rank of a node), 64-bit flag words inside them, and bounded,
// backing-off waits on those flags.
//
// # Segments
//
// The engine's lifecycle for one segment is:
//
//  1. One local rank picks a random name with Name(prefix) and calls Create.
//     Create reserves the memory with fallocate(2), so a full /dev/shm is
//     an error here and not a SIGBUS at first touch later.
//  2. It broadcasts the name over the node communicator.
//  3. Every other local rank calls Open with the same name and size.
//  4. A barrier on the node communicator.
//  5. The creator calls Unlink. From now on the segment has no name: the
//     mappings keep the memory alive, and the kernel frees it when the
//     last process unmaps or dies. No crash can leak it any more.
//
// Between steps 1 and 5 a crash can leave the file behind; the launcher
// (cmd/dpmlrun) therefore runs Sweep(prefix) before and after a job. Close
// unmaps, and also unlinks when the handle created the segment and has not
// unlinked it yet (an error path that never reached step 5).
//
// CreateUnnamed closes that window: the segment is an O_TMPFILE file that
// never has a name; the creator broadcasts Ref (/proc/<pid>/fd/<fd>), the
// others map it with OpenRef, and the creator's Unlink closes the
// descriptor. A crash at any step leaves nothing behind. It needs
// O_TMPFILE in the directory (tmpfs has it) and a /proc through which the
// other ranks may open the creator's descriptor (same user).
//
// Names must not contain '/'. The directory is DefaultDir unless a Store
// with another Dir is used; this package reads no environment variables (the
// DPML_SHM_DIR override, if any, belongs to the caller's configuration).
//
// # Flag words
//
// Uint64At views 8 aligned bytes of a mapping as an atomic.Uint64. Flags
// written by different processes should live on separate cache lines
// (offsets PadTo(x, CacheLine) apart) to avoid false sharing.
//
// A single-writer flag ("my data of generation g is ready") is raised with
// StoreRelease, not Store: release order is all it needs, and on amd64
// Store is an XCHG that stalls the writer until it owns the line its
// readers hold. Likewise a writer should not load from its own line just
// before writing it (Go's nil check on a field address does): the line is
// in its readers' caches, and the load costs a whole transfer.
//
// # Waits
//
// Waiter.UntilAtLeast and Waiter.UntilAllAtLeast wait for flags to reach a
// value. They spin briefly (the fast case: the peer is running on another
// core and is about to write), then call the Poll hook and sched_yield(2) in
// turns, then sleep in escalating steps up to ~64 us. The back-off matters
// because MPI jobs often oversubscribe cores: a waiter that spins forever
// steals the core from the very process it waits for, and long waits (a
// leader busy in an inter-node reduction) should not burn CPU. Every wait is
// bounded by a timeout (default 60 s) and can be aborted through a shared
// abort word, so a dead or diverged peer gives an error instead of a hang.
package shm
