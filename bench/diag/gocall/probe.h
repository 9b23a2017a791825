// probe.h: the C half of bench/diag/gocall, shared by the Go probe (cgo)
// and its C twin (ctwin/gocall.c), so both time the same loops and read
// the same per-thread counters.
#ifndef GOCALL_PROBE_H
#define GOCALL_PROBE_H

#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

// The element type of a message of the given size: one float64 per 8
// bytes, or float32 when the size is not a multiple of 8 (4 B).
static inline MPI_Datatype probe_dt(int bytes) { return bytes % 8 == 0 ? MPI_DOUBLE : MPI_FLOAT; }
static inline int probe_count(int bytes) { return bytes % 8 == 0 ? bytes / 8 : bytes / 4; }

// Back-to-back blocking MPI_Allreduce (sum), iters times.
static int probe_loop_block(void *s, void *r, int bytes, long iters) {
	MPI_Datatype dt = probe_dt(bytes);
	int n = probe_count(bytes);
	for (long i = 0; i < iters; i++) {
		int rc = MPI_Allreduce(s, r, n, dt, MPI_SUM, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS) return rc;
	}
	return MPI_SUCCESS;
}

// One blocking MPI_Allreduce: what a Go loop calls once per iteration
// (the "cwrap" variant).
static inline int probe_one_block(void *s, void *r, int bytes) {
	return MPI_Allreduce(s, r, probe_count(bytes), probe_dt(bytes), MPI_SUM, MPI_COMM_WORLD);
}

// Back-to-back MPI_Iallreduce completed by MPI_Test polling.
static int probe_loop_iall(void *s, void *r, int bytes, long iters) {
	MPI_Datatype dt = probe_dt(bytes);
	int n = probe_count(bytes);
	for (long i = 0; i < iters; i++) {
		MPI_Request q;
		int flag = 0, rc = MPI_Iallreduce(s, r, n, dt, MPI_SUM, MPI_COMM_WORLD, &q);
		if (rc != MPI_SUCCESS) return rc;
		while (!flag) {
			rc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) return rc;
		}
	}
	return MPI_SUCCESS;
}

// probe_spin busy-waits ns nanoseconds: a stand-in for an MPI call that
// polls for ns, with no communication (the "spin" variants: the Go
// runtime's cost per call, free of the other ranks).
static inline int probe_spin(long ns) {
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) >= ns) return 0;
	}
}

// The clock probe (gocall clock): iters reads of CLOCK_MONOTONIC, of
// MPI_Wtime, and a call that does nothing (a cgo call's own cost).
static inline double probe_clock_loop(long iters, int wtime) {
	struct timespec a, b, t;
	double sink = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < iters; i++) {
		if (wtime) {
			sink += MPI_Wtime();
		} else {
			clock_gettime(CLOCK_MONOTONIC, &t);
			sink += (double)t.tv_nsec;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (sink == -1) return -1; // keeps the reads
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)iters;
}

static inline void probe_noop(void) {}

// probe_self_loop: iters MPI_Allreduce calls of one float on MPI_COMM_SELF
// (no peer to wait for: what one call costs the caller), ns per call.
static inline double probe_self_loop(long iters) {
	struct timespec a, b;
	float in = 1, out = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < iters; i++) MPI_Allreduce(&in, &out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)iters;
}

static int probe_loop_spin(long ns, long iters) {
	for (long i = 0; i < iters; i++) probe_spin(ns);
	return 0;
}

// Per-thread counters from /proc/self/task/TID/{status,schedstat,comm}.
typedef struct {
	long tid;
	long vol, invol;   // voluntary_ctxt_switches, nonvoluntary_ctxt_switches
	long long run_ns;  // schedstat: time on a CPU
	long long wait_ns; // schedstat: time runnable, waiting for a CPU
	char comm[20];
	char sys[16]; // first field of /proc/.../syscall: the system call it sits in ("running" when on a CPU)
} probe_thread;

static int probe_read_file(const char *path, char *buf, int cap) {
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	int n = (int)fread(buf, 1, (size_t)cap - 1, f);
	fclose(f);
	if (n < 0) n = 0;
	buf[n] = 0;
	return n;
}

static long probe_field(const char *buf, const char *key) {
	const char *p = strstr(buf, key);
	return p ? atol(p + strlen(key)) : 0;
}

// probe_threads fills at most max entries, sorted by tid; returns the count.
static int probe_threads(probe_thread *t, int max) {
	DIR *d = opendir("/proc/self/task");
	if (!d) return 0;
	int n = 0;
	struct dirent *e;
	char path[320], buf[4096];
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
		probe_thread *p = &t[n];
		memset(p, 0, sizeof *p);
		p->tid = atol(e->d_name);
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		if (probe_read_file(path, buf, sizeof buf) < 0) continue;
		p->vol = probe_field(buf, "\nvoluntary_ctxt_switches:");
		p->invol = probe_field(buf, "\nnonvoluntary_ctxt_switches:");
		snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
		if (probe_read_file(path, buf, sizeof buf) > 0) sscanf(buf, "%lld %lld", &p->run_ns, &p->wait_ns);
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		if (probe_read_file(path, buf, sizeof buf) > 0) {
			buf[strcspn(buf, "\n")] = 0;
			snprintf(p->comm, sizeof p->comm, "%.19s", buf);
		}
		snprintf(path, sizeof path, "/proc/self/task/%s/syscall", e->d_name);
		if (probe_read_file(path, buf, sizeof buf) > 0) {
			buf[strcspn(buf, " \n")] = 0;
			snprintf(p->sys, sizeof p->sys, "%.15s", buf);
		}
		n++;
	}
	closedir(d);
	for (int i = 1; i < n; i++) // insertion sort by tid
		for (int j = i; j > 0 && t[j - 1].tid > t[j].tid; j--) {
			probe_thread x = t[j];
			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	return n;
}

// probe_sum: context switches and CPU time of the main thread (tid ==
// pid: the rank's MPI thread in both programs) and of all other threads.
typedef struct {
	long main_cs, other_cs; // voluntary + involuntary
	long long other_run_ns, main_wait_ns;
	int nthreads;
} probe_totals;

static probe_totals probe_sum(void) {
	probe_thread t[256];
	int n = probe_threads(t, 256);
	probe_totals s;
	memset(&s, 0, sizeof s);
	s.nthreads = n;
	long pid = (long)getpid();
	for (int i = 0; i < n; i++) {
		if (t[i].tid == pid) {
			s.main_cs += t[i].vol + t[i].invol;
			s.main_wait_ns += t[i].wait_ns;
		} else {
			s.other_cs += t[i].vol + t[i].invol;
			s.other_run_ns += t[i].run_ns;
		}
	}
	return s;
}

#endif
