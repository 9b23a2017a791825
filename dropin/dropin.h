// C layer of libdpml.so, shared by dropin.c, fortran.c and the cgo
// preamble of main.go. Declarations only: cgo includes the preamble in more
// than one translation unit.
#ifndef DPML_DROPIN_H
#define DPML_DROPIN_H

#include <stdint.h>
#include <mpi.h>

// Settings read once by the Go side (dpmlGoInit) from the DPML_* variables.
typedef struct {
	int disabled;      // DPML_DISABLE: pass every call through
	int verbose;       // DPML_VERBOSE
	int64_t min_bytes; // DPML_MIN_BYTES: smaller calls pass through
	int64_t from_call; // DPML_DROPIN_FROM_CALL: route a communicator from its n-th eligible call
	double setup_after; // DPML_SETUP_AFTER (seconds): the calls' priced time before setup
	double price_call, price_byte; // a call's price towards setup_after (config.SetupPriceCall, SetupPriceByte)
	int setup_world;    // DPML_SETUP_WORLD: 0 defer, 1 init (set up inside MPI_Init), 2 warm (and dpml.Comm.Warm)
	int world_rank;
} dpml_settings;

// Why a call was not routed to the engine; dpml_reason_words names them (in
// the DPML_VERBOSE counters and DPMLX_Last_plan's "native reason=WHY").
enum {
	DPML_ROUTED = 0,     // routed to the DPML engine
	DPML_P_NESTED,       // made by the engine itself (recursion guard)
	DPML_P_INIT,         // MPI not initialized / already finalized
	DPML_P_DISABLED,     // DPML_DISABLE=1, or the library could not adopt the application's MPI
	DPML_P_COUNT,        // count <= 0
	DPML_P_TYPE,         // not a predefined fixed-size arithmetic type
	DPML_P_OP,           // user op, MAXLOC, REPLACE, ... or op not valid for the type
	DPML_P_SMALL,        // below DPML_MIN_BYTES
	DPML_P_BUFFER,       // MPI_BOTTOM or a NULL buffer
	DPML_P_COMM,         // intercommunicator or a single rank
	DPML_P_WARMUP,       // before DPML_DROPIN_FROM_CALL
	DPML_P_SETUP_FAILED, // the engine could not be set up on this communicator
	DPML_P_PLAN,         // DPMLX_Set_plan(comm, "native")
	DPML_P_SETTINGS,     // the ranks of the communicator disagree on the drop-in's settings (or some are invalid)
	DPML_NREASONS
};

extern const char *const dpml_reason_words[DPML_NREASONS];

// Counters, indexed by the reasons above (atomically updated).
extern uint64_t dpml_counts[DPML_NREASONS];
extern uint64_t dpml_comms_setup, dpml_comms_released;
extern uint64_t dpml_fused_calls; // routed calls the C layer ran itself (fused.h)
extern uint64_t dpml_block_calls; // of those, calls of the learner's timed blocks
extern uint64_t dpml_sample_calls; // and settled keys' stride samples, stamped
extern uint64_t dpml_parked_calls; // of those, calls under a parked clearance
extern uint64_t dpml_agreements;  // settings agreements run
void dpml_note_released(void);

// The allreduce entry shared by the C and Fortran bindings: routes or
// passes through to PMPI_Allreduce. sendbuf may be MPI_IN_PLACE.
int dpml_allreduce_entry(const void *sendbuf, void *recvbuf, int count,
			 MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
// MPI_Finalize minus the name: release all DPML state, then PMPI_Finalize.
int dpml_finalize_entry(void);

#ifdef DPML_TRACE
extern uint64_t dpml_tc[4]; // dropin.c: the C steps of the latest routed call
#endif

// Helpers for the Go side.
static inline uintptr_t dpml_comm_handle(MPI_Comm c) { return (uintptr_t)c; }
// dpml_comm_from_handle is its inverse, for a handle the Go side gave out
// (mpi.Comm.Handle: a pointer's value with Open MPI, an int with MPICH).
static inline MPI_Comm dpml_comm_from_handle(uintptr_t h) { return (MPI_Comm)h; }

#endif
