// Package sharp offloads the inter-node step of small allreduces to
// in-network reduction: Mellanox/NVIDIA SHArP switches, through
// libsharp_coll, or the MPI library's own offload. The DPML paper's best
// small-message design hands that step to the switches (up to 2.5x at one
// rank per node with one leader per node, 60-100% with one leader per
// socket at higher ppn, nothing past about 4 KiB); package dpml decides
// when (dpml/offload.go), this package does it.
//
// # Interface
//
// A Backend attaches a Group to a communicator, collectively (every member
// gets a Group, or every member an error). A Group has agreed Caps (element
// types and ops, payload per operation, outstanding operations, whether it
// needs one process per node), starts non-blocking in-place allreduces
// (Start, Request.Test) and runs a whole buffer cut to the payload limit
// with a bounded number in flight (Allreduce). An error that wraps
// ErrNotSupported means nothing was started and the call belongs on the
// host path; Fallback tells. Such errors depend only on agreed data, so
// every member falls back together. A started operation that does not
// complete (switch or member gone) ends the wait with an error wrapping
// ErrFailed once the caller's timeout passes: the data is lost then.
//
// # Backends
//
// Libsharp loads libsharp_coll with dlopen at the first Attach (nothing is
// linked at build time, so the package builds and its tests run everywhere)
// and runs the documented sequence: sharp_coll_init with the job id from
// rank 0 and out-of-band barrier, bcast and gather callbacks implemented
// over MPI on the group's communicator; sharp_coll_caps_query;
// sharp_coll_comm_init; sharp_coll_reg_mr of one staging buffer of
// AttachOptions.MaxBytes; per operation sharp_coll_do_allreduce_nb,
// sharp_coll_req_test and sharp_coll_req_free; at Close
// sharp_coll_comm_destroy, sharp_coll_dereg_mr and sharp_coll_finalize. The
// members agree on the outcome of every step before the next collective
// one. The structures are declared here from SHArP's public API header
// (3.x layouts); the types and ops offered are those both the library's
// caps and this package map (no product: UCC and the NCCL plugin do not map
// it either; no complex numbers).
//
// MPI is for MPI libraries that offload a communicator's allreduce to
// SHArP themselves (HCOLL, UCC's tl/sharp, MVAPICH2): the group is a
// duplicate of the communicator and an operation its MPI_Iallreduce.
//
// # Emulation
//
// The tests build internal/testkit/fakesharp: a fake libsharp_coll.so with the same
// entry points, whose switch is a process per group reducing through
// shared memory. It enforces the payload and outstanding-operation limits
// it reports, refuses what SHArP lacks, and stops completing operations
// when the switch is killed or a member disappears. Group.Emulated reports
// it, and every result obtained on it must say "emulated": it tests the
// code path, never SHArP's performance.
//
// Detect (used by `dpmlbench info`) reports whether libsharp_coll loads,
// the InfiniBand devices of sysfs and the MPI library's offload settings in
// the environment.
package sharp
