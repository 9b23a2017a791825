/*
 * dpmlx.h: the extension entry points of libdpml.so, the drop-in DPML
 * MPI_Allreduce (DPML-Go). `make` copies this header next to the library
 * (bin/dpmlx.h).
 *
 * An unmodified program needs none of this: preloaded or linked, libdpml.so
 * replaces MPI_Allreduce and its engine chooses a plan per call. These
 * functions are for programs that want to choose or see the plan themselves:
 * benchmarks that compare plans in one run (bin/dpmlbench-c), or an
 * application that knows a communicator's best plan. They are plain C
 * functions outside the MPI namespace; they never call an error handler and
 * report failures only by their return value (an MPI error class).
 *
 * A program that must also run without libdpml.so looks them up at run time
 * instead of linking them:
 *
 *     #include <dlfcn.h>
 *     #include "dpmlx.h"
 *     DPMLX_Set_plan_fn set_plan = (DPMLX_Set_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Set_plan");
 *     if (set_plan == NULL) { ... libdpml.so is not loaded: MPI_Allreduce is the MPI library's ... }
 *
 * Plan specs are a variant name, optionally followed by settings:
 *
 *     spec    = variant [ ":" setting { "," setting } ]
 *     variant = auto | native | dpml | pipelined
 *     setting = l=N (leaders per node) | k=N (pipeline depth, pipelined only)
 *             | intra=auto|shm|cma (intra-node data path) | seg=BYTES (segment size, e.g. 64K)
 *
 * "auto" lets the engine choose (its tuner or built-in rule), "native" sends
 * the calls to the MPI library (PMPI_Allreduce), "dpml:l=2" forces two
 * leaders per node, "pipelined:l=8,k=4" the pipelined variant with k = 4,
 * "auto:l=4" forces l and leaves the rest to the engine. Settings left out
 * are chosen by the engine. The grammar is the one of dpml.ParseOverride
 * (package dpml of DPML-Go), so Go programs and results files use the same
 * names.
 */
#ifndef DPMLX_H
#define DPMLX_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface; functions are only ever added. */
#define DPMLX_VERSION 1

/* A buffer of this many bytes holds any spec these functions write. */
#define DPMLX_MAX_SPEC 256

/*
 * DPMLX_Check_plan parses spec without using it. On success it writes the
 * canonical form into buf (lower case, settings in the order l, k, intra,
 * seg: "Pipelined:k=4,l=8" gives "pipelined:l=8,k=4") and returns
 * MPI_SUCCESS; on a bad spec it writes the reason and returns MPI_ERR_ARG.
 * buf may be NULL (len 0). The text is truncated to len - 1 bytes and always
 * NUL-terminated. Needs no MPI initialization.
 */
int DPMLX_Check_plan(const char *spec, char *buf, int len);

/*
 * DPMLX_Set_plan forces the plan of the later MPI_Allreduce calls on comm
 * that libdpml.so routes to its engine (it overrides DPML_LEADERS and
 * DPML_PIPELINE there); "auto" restores the engine's own choice and
 * "native" sends every call on comm to PMPI_Allreduce without entering the
 * engine (calls before the engine was set up on comm then never set it up).
 * Like the MPI_Allreduce arguments, the plan must be the same on every rank
 * of comm when they make the same call, and must not change while another
 * thread is inside a collective on comm; setting it is local and cheap (a
 * string compare when it does not change). Calls that libdpml.so passes to
 * the MPI library anyway (a type, op or size it does not route: see
 * DPMLX_Last_plan) are not affected.
 *
 * Returns MPI_SUCCESS; MPI_ERR_ARG for a bad spec (DPMLX_Check_plan says
 * why); MPI_ERR_COMM for MPI_COMM_NULL, or a plan other than auto and
 * native on an intercommunicator or a communicator of one rank (the library
 * never routes those); MPI_ERR_UNSUPPORTED_OPERATION for a plan other than
 * native when the library is disabled (DPML_DISABLE or bad DPML_* settings);
 * MPI_ERR_OTHER before MPI_Init or after MPI_Finalize.
 */
int DPMLX_Set_plan(MPI_Comm comm, const char *spec);

/*
 * DPMLX_Last_plan describes the calling thread's latest MPI_Allreduce, which
 * must have been on comm. For a call the engine ran, the text up to the
 * first space is a spec that forces the same plan again, followed by
 * informational words:
 *
 *     dpml:l=2,k=1,intra=shm,seg=1M segments=1
 *     pipelined:l=8,k=4,intra=cma,seg=1M segments=16 stream
 *
 * (segments: shared-memory segments the message was cut into; stream: the
 * result was written with streaming stores). "native" alone is a call the
 * engine handed to the MPI library itself. A call libdpml.so passed to the
 * MPI library without entering the engine is "native reason=WHY", WHY one
 * of: not-initialized, disabled, count, type, op, small (below
 * DPML_MIN_BYTES), buffer, communicator, warm-up (DPML_DROPIN_FROM_CALL),
 * setup-failed, native-plan (DPMLX_Set_plan(comm, "native")).
 *
 * Returns MPI_SUCCESS; MPI_ERR_TRUNCATE when len was too small (the text is
 * truncated and NUL-terminated); MPI_ERR_OTHER, writing "none", when the
 * thread's latest MPI_Allreduce was on another communicator or there was
 * none (call it right after the call it describes); MPI_ERR_ARG for a NULL
 * buf or len < 1.
 */
int DPMLX_Last_plan(MPI_Comm comm, char *buf, int len);

/*
 * DPMLX_Library_version returns a static string naming the library build,
 * such as "DPML-Go 047646a... (dpmlx 1)", for benchmark reports.
 */
const char *DPMLX_Library_version(void);

/* Function pointer types for dlsym. */
typedef int (*DPMLX_Check_plan_fn)(const char *, char *, int);
typedef int (*DPMLX_Set_plan_fn)(MPI_Comm, const char *);
typedef int (*DPMLX_Last_plan_fn)(MPI_Comm, char *, int);
typedef const char *(*DPMLX_Library_version_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DPMLX_H */
