// C side of package mpi. Everything that depends on how the MPI library
// represents handles (pointers in Open MPI, ints in MPICH) lives here, so the
// Go code never compares or constructs a handle itself.
#ifndef DPML_MPI_H
#define DPML_MPI_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

// DPML_KIND_*, DPML_OP_*, DPML_NKINDS, DPML_NOPS and the DPML_KINDS /
// DPML_OPS tables, generated from the Go constants (go generate ./mpi).
#include "dpml_kinds.h"

typedef struct {
	MPI_Comm world, self;
	MPI_Datatype dt[DPML_NKINDS];
	MPI_Op op[DPML_NOPS];
} dpml_handles;

// Predefined handles are link-time constants in both ABIs (addresses of
// globals in Open MPI, integer constants in MPICH), so they can be read once
// before MPI_Init and cached on the Go side.
static inline void dpml_get_handles(dpml_handles *h) {
	h->world = MPI_COMM_WORLD;
	h->self = MPI_COMM_SELF;
#define DPML_SET_DT(K, N, T, C) h->dt[K] = T;
	DPML_KINDS(DPML_SET_DT)
#undef DPML_SET_DT
#define DPML_SET_OP(O, M) h->op[O] = M;
	DPML_OPS(DPML_SET_OP)
#undef DPML_SET_OP
}

static inline int dpml_comm_is_null(MPI_Comm c) { return c == MPI_COMM_NULL; }
static inline int dpml_request_is_null(MPI_Request r) { return r == MPI_REQUEST_NULL; }
static inline MPI_Comm dpml_comm_null(void) { return MPI_COMM_NULL; }
static inline MPI_Request dpml_request_null(void) { return MPI_REQUEST_NULL; }

// A C handle travels through Go as an integer. Open MPI: the pointer value.
// MPICH: the int value, zero-extended (only the low 32 bits are used).
// DPML_TO_UINTPTR and DPML_FROM_UINTPTR are the two directions for any
// handle type; DPML_DT, DPML_OP and DPML_COMM convert the blocking calls'
// integer arguments back.
#if defined(OPEN_MPI)
#define DPML_TO_UINTPTR(h) ((uintptr_t)(h))
#define DPML_FROM_UINTPTR(T, h) ((T)(h))
#else
#define DPML_TO_UINTPTR(h) ((uintptr_t)(unsigned int)(h))
#define DPML_FROM_UINTPTR(T, h) ((T)(unsigned int)(h))
#endif
#define DPML_DT(h) DPML_FROM_UINTPTR(MPI_Datatype, h)
#define DPML_OP(h) DPML_FROM_UINTPTR(MPI_Op, h)
#define DPML_COMM(h) DPML_FROM_UINTPTR(MPI_Comm, h)
static inline uintptr_t dpml_comm_to_uintptr(MPI_Comm c) { return DPML_TO_UINTPTR(c); }
static inline MPI_Comm dpml_comm_from_uintptr(uintptr_t h) { return DPML_COMM(h); }
static inline uintptr_t dpml_datatype_to_uintptr(MPI_Datatype d) { return DPML_TO_UINTPTR(d); }
static inline uintptr_t dpml_op_to_uintptr(MPI_Op o) { return DPML_TO_UINTPTR(o); }

static inline int dpml_comm_fint(MPI_Comm c) { return (int)MPI_Comm_c2f(c); }
static inline MPI_Comm dpml_comm_from_fint(int f) { return MPI_Comm_f2c((MPI_Fint)f); }

static inline int dpml_set_errors_return(MPI_Comm c) {
	return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
}

static inline int dpml_split_shared(MPI_Comm c, int key, MPI_Comm *out) {
	return MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, out);
}

static inline int dpml_init_thread(int required, int *provided) {
	return MPI_Init_thread(NULL, NULL, required, provided);
}

// Some implementations reject NULL buffers even with count 0, and Go has no
// valid pointer for an empty slice, so empty buffers get distinct dummies
// (distinct so "sendbuf == recvbuf" checks do not fire).
static char dpml_dummy_s[16], dpml_dummy_r[16];
#define DPML_S(p) ((p) ? (const void *)(p) : (const void *)dpml_dummy_s)
#define DPML_R(p) ((p) ? (void *)(p) : (void *)dpml_dummy_r)

// The blocking calls' arguments (package doc, "The call's cost"): buffers
// as char pointers, which cgo does not check (char holds no pointer), and
// handles as the integers the Go side caches (DPML_DT, DPML_OP, DPML_COMM).
// A pointer-typed argument costs a runtime check per call
// (runtime.cgoCheckPointer), and in Open MPI every handle is one.
static inline int dpml_allreduce(const char *s, char *r, int n, uintptr_t dt, uintptr_t op, uintptr_t c) {
	return MPI_Allreduce(DPML_S(s), DPML_R(r), n, DPML_DT(dt), DPML_OP(op), DPML_COMM(c));
}
static inline int dpml_allreduce_inplace(char *b, int n, uintptr_t dt, uintptr_t op, uintptr_t c) {
	return MPI_Allreduce(MPI_IN_PLACE, DPML_R(b), n, DPML_DT(dt), DPML_OP(op), DPML_COMM(c));
}
// The same through the profiling entry point (SetInterposed): inside a
// library that interposes MPI_Allreduce, the package's calls must not
// enter it again.
static inline int dpml_pallreduce(const char *s, char *r, int n, uintptr_t dt, uintptr_t op, uintptr_t c) {
	return PMPI_Allreduce(DPML_S(s), DPML_R(r), n, DPML_DT(dt), DPML_OP(op), DPML_COMM(c));
}
static inline int dpml_pallreduce_inplace(char *b, int n, uintptr_t dt, uintptr_t op, uintptr_t c) {
	return PMPI_Allreduce(MPI_IN_PLACE, DPML_R(b), n, DPML_DT(dt), DPML_OP(op), DPML_COMM(c));
}
// The non-blocking calls the same way (their buffers are pinned on the Go
// side for as long as MPI holds them); req is the Go Request's
// MPI_Request, passed as a char pointer for the same reason.
static inline int dpml_iallreduce(const char *s, char *r, int n, uintptr_t dt, uintptr_t op, uintptr_t c, char *req) {
	return MPI_Iallreduce(DPML_S(s), DPML_R(r), n, DPML_DT(dt), DPML_OP(op), DPML_COMM(c), (MPI_Request *)req);
}
static inline int dpml_iallreduce_inplace(char *b, int n, uintptr_t dt, uintptr_t op, uintptr_t c, char *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, DPML_R(b), n, DPML_DT(dt), DPML_OP(op), DPML_COMM(c), (MPI_Request *)req);
}
static inline int dpml_reduce(const char *s, char *r, int n, uintptr_t dt, uintptr_t op, int root, uintptr_t c) {
	return MPI_Reduce(DPML_S(s), DPML_R(r), n, DPML_DT(dt), DPML_OP(op), root, DPML_COMM(c));
}
// Called on the root only.
static inline int dpml_reduce_inplace(char *b, int n, uintptr_t hdt, uintptr_t hop, int root, uintptr_t hc) {
	MPI_Datatype dt = DPML_DT(hdt);
	MPI_Op op = DPML_OP(hop);
	MPI_Comm c = DPML_COMM(hc);
#if defined(OPEN_MPI)
	return MPI_Reduce(MPI_IN_PLACE, DPML_R(b), n, dt, op, root, c);
#else
	// MPICH 4.0.2 (ch4) crashes on MPI_Reduce with MPI_IN_PLACE at a
	// non-zero root for larger counts; reduce from a copy instead.
	int sz = 0, rc;
	void *tmp;
	if (root == 0 || n == 0) return MPI_Reduce(MPI_IN_PLACE, DPML_R(b), n, dt, op, root, c);
	rc = MPI_Type_size(dt, &sz);
	if (rc != MPI_SUCCESS) return rc;
	tmp = malloc((size_t)n * (size_t)sz);
	if (tmp == NULL) return MPI_ERR_NO_MEM;
	memcpy(tmp, b, (size_t)n * (size_t)sz);
	rc = MPI_Reduce(tmp, b, n, dt, op, root, c);
	free(tmp);
	return rc;
#endif
}
static inline int dpml_bcast(char *b, int n, uintptr_t dt, int root, uintptr_t c) {
	return MPI_Bcast(DPML_R(b), n, DPML_DT(dt), root, DPML_COMM(c));
}
static inline int dpml_allgather(const char *s, char *r, int n, uintptr_t dt, uintptr_t c) {
	return MPI_Allgather(DPML_S(s), n, DPML_DT(dt), DPML_R(r), n, DPML_DT(dt), DPML_COMM(c));
}
static inline int dpml_send(const char *b, int n, uintptr_t dt, int dest, int tag, uintptr_t c) {
	return MPI_Send(DPML_S(b), n, DPML_DT(dt), dest, tag, DPML_COMM(c));
}
static inline int dpml_recv(char *b, int n, uintptr_t dt, int src, int tag, uintptr_t c, MPI_Status *st) {
	return MPI_Recv(DPML_R(b), n, DPML_DT(dt), src, tag, DPML_COMM(c), st);
}
static inline int dpml_barrier(uintptr_t c) { return MPI_Barrier(DPML_COMM(c)); }
static inline int dpml_isend(const char *b, int n, uintptr_t dt, int dest, int tag, uintptr_t c, char *req) {
	return MPI_Isend(DPML_S(b), n, DPML_DT(dt), dest, tag, DPML_COMM(c), (MPI_Request *)req);
}
static inline int dpml_irecv(char *b, int n, uintptr_t dt, int src, int tag, uintptr_t c, char *req) {
	return MPI_Irecv(DPML_R(b), n, DPML_DT(dt), src, tag, DPML_COMM(c), (MPI_Request *)req);
}
// The requests as char pointers too (a poll loop calls Test at every turn).
static inline int dpml_wait(char *req, MPI_Status *st) { return MPI_Wait((MPI_Request *)req, st); }
static inline int dpml_test(char *req, int *flag, MPI_Status *st) { return MPI_Test((MPI_Request *)req, flag, st); }
static inline int dpml_waitall(int n, char *reqs, MPI_Status *sts) { return MPI_Waitall(n, (MPI_Request *)reqs, sts); }
static inline int dpml_get_count(MPI_Status *st, MPI_Datatype dt) {
	int n = 0;
	if (MPI_Get_count(st, dt, &n) != MPI_SUCCESS || n == MPI_UNDEFINED) return -1;
	return n;
}
static inline int dpml_status_source(MPI_Status *st) { return st->MPI_SOURCE; }
static inline int dpml_status_tag(MPI_Status *st) { return st->MPI_TAG; }
static inline int dpml_status_error(MPI_Status *st) { return st->MPI_ERROR; }

static inline int dpml_error_class(int code) {
	int cls = 0;
	if (MPI_Error_class(code, &cls) != MPI_SUCCESS) return -1;
	return cls;
}
// Copies the message into buf (NUL-terminated); returns its length.
static inline int dpml_error_string(int code, char *buf, int cap) {
	char tmp[MPI_MAX_ERROR_STRING + 1];
	int len = 0;
	if (MPI_Error_string(code, tmp, &len) != MPI_SUCCESS) len = 0;
	if (len > cap - 1) len = cap - 1;
	if (len < 0) len = 0;
	for (int i = 0; i < len; i++) buf[i] = tmp[i];
	buf[len] = 0;
	return len;
}

#endif
