/*
 * EMULATED SHArP: a fake libsharp_coll.so for DPML-Go's tests.
 *
 * It exports the entry points of the public libsharp_coll API (same names,
 * the signatures and structure layouts of SHArP's documented api/sharp_coll.h),
 * so that package sharp's production path (dlopen, sharp_coll_init with
 * out-of-band callbacks, caps query, comm init, memory registration,
 * non-blocking allreduce, test, free, teardown) runs end to end on one host.
 * The declarations below are written for this file, independently of package
 * sharp's, so that a layout mistake on one side shows up as a test failure.
 *
 * The "switch" of a group is a process forked (twice, so no rank has to reap
 * it) by group rank 0 at sharp_coll_comm_init. It shares a memory segment
 * with the members: each member writes its contribution to the slot of the
 * operation, the switch reduces the contributions in member order (so every
 * member gets the same bits) and publishes the result, each member copies it
 * out at sharp_coll_req_test. The segment's name carries the job token
 * (/dev/shm/dpml-<DPML_JOB>-fakesharp-...) and is unlinked as soon as every
 * member has mapped it, so nothing is left in /dev/shm even after a crash.
 *
 * Limits the real hardware has are enforced, not only reported: an
 * operation larger than the payload per operation (DPML_FAKESHARP_PAYLOAD)
 * or beyond the outstanding operations (DPML_FAKESHARP_OSTS) is refused with
 * an error, and so are types and ops SHArP lacks. Faults: the switch kills
 * itself when the operation after the first DPML_FAKESHARP_KILL_AFTER ones
 * has fully arrived (so it dies with that operation in flight and later
 * ones are refused); it exits when a member
 * process disappears. Either way the members' requests never complete (as
 * with a lost switch: sharp_coll_req_test has no error status), new
 * operations are refused, and the caller's bounded wait reports the error.
 *
 * Nothing here says anything about real SHArP performance.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- The public API, as documented (layouts; enums are ints). ---- */

enum { DT_U32, DT_I32, DT_U64, DT_I64, DT_F32, DT_F64, DT_U16, DT_I16, DT_F16, DT_BF16, DT_U8, DT_I8, DT_NULL };
enum { OP_MAX, OP_MIN, OP_SUM, OP_PROD, OP_LAND, OP_BAND, OP_LOR, OP_BOR, OP_LXOR, OP_BXOR, OP_MAXLOC, OP_MINLOC, OP_NULL };
enum {
	E_OK = 0, E_ERROR = -1, E_NOT_SUPP = -2, E_NOMEM = -3, E_GROUP_ALLOC = -4, E_CONN_TREE = -5,
	E_OOB = -15, E_INVAL = -10, E_JOB = -11, E_NO_RESOURCE = -20,
};

struct sharp_coll_config {
	const char *ib_dev_list;
	int user_progress_num_polls;
	int coll_timeout;
	uint32_t flags;
	int reserved[3];
};

struct sharp_coll_out_of_band_colls {
	int (*bcast)(void *context, void *buffer, int len, int root);
	int (*barrier)(void *context);
	int (*gather)(void *context, int root, void *sbuf, void *rbuf, int len);
};

struct sharp_coll_comm_init_spec {
	int rank;
	int size;
	void *oob_ctx;
	const uint32_t *group_world_ranks;
	int reserved[2];
};

struct sharp_coll_init_spec {
	uint64_t job_id;
	int world_rank;
	int world_size;
	int (*progress_func)(void);
	int group_channel_idx;
	struct sharp_coll_config config;
	struct sharp_coll_out_of_band_colls oob_colls;
	int world_local_rank;
	int enable_thread_support;
	void *oob_ctx;
	int reserved[4];
};

struct sharp_coll_caps {
	int sharp_pkt_version;
	uint64_t reserved[2];
	struct {
		uint64_t dtypes, tag_dtypes, reduce_ops, feature_mask, reserved[4];
	} support_mask;
	struct {
		int max_osts, user_data_per_ost, max_groups, max_group_channels, osts_per_group;
	} resources;
};

struct sharp_coll_data_desc {
	int type;     /* 0: contiguous buffer (the only one implemented by SHArP too) */
	int mem_type; /* 0: host */
	int reserved[2];
	union {
		struct {
			void *ptr;
			size_t length;
			void *mem_handle;
		} buffer;
		struct {
			unsigned count;
			void *vector;
		} iov;
	};
};

struct sharp_coll_reduce_spec {
	int root;
	struct sharp_coll_data_desc sbuf_desc;
	struct sharp_coll_data_desc rbuf_desc;
	int dtype;
	size_t length;
	int op;
	int tag_dtype;
	int aggr_mode;
	int stream_lock_batch_size;
	size_t offset;
	int reserved[2];
};

/* The marker package sharp looks for: results on this library are emulated. */
__attribute__((visibility("default"))) const int dpml_fakesharp_emulated = 1;

__attribute__((visibility("default"))) const struct sharp_coll_config sharp_coll_default_config = {
	NULL, 128, -1, 0, {0, 0, 0}};

/* ---- The emulation. ---- */

#define MAX_MEMBERS 64
#define MAX_REGS 16
#define FK_MAGIC 0x4b41462d50524148ULL

static int dt_size(int dt) {
	switch (dt) {
	case DT_U8: case DT_I8: return 1;
	case DT_U16: case DT_I16: return 2;
	case DT_U32: case DT_I32: case DT_F32: return 4;
	case DT_U64: case DT_I64: case DT_F64: return 8;
	}
	return 0; /* 16-bit floats and NULL: not emulated */
}

static int op_ok(int op) { return op == OP_MAX || op == OP_MIN || op == OP_SUM || (op >= OP_LAND && op <= OP_BXOR); }

struct fk_ctx {
	int rank, size;
	uint64_t job;
	struct sharp_coll_out_of_band_colls oob;
	void *oob_ctx;
	int payload, osts;
	long kill_after;
	struct {
		char *p;
		size_t n;
		int used;
	} regs[MAX_REGS];
};

/* Segment layout: a header, then nslots slots. */
struct fk_hdr {
	uint64_t magic;
	int32_t members, payload, nslots;
	_Atomic int32_t state; /* 0 alive; 1 switch killed; 2 a member disappeared; 3 members disagree */
	_Atomic int32_t switch_pid;
	_Atomic int32_t pids[MAX_MEMBERS];
	_Atomic int32_t left[MAX_MEMBERS];
	_Atomic uint64_t completed;
	long kill_after;
};

struct fk_desc {
	int32_t dtype, op;
	uint64_t length;
};

struct fk_slot {
	_Atomic uint64_t arrived[MAX_MEMBERS];  /* op number member m contributed here */
	_Atomic uint64_t consumed[MAX_MEMBERS]; /* op number member m took the result of */
	_Atomic uint64_t done;                  /* op number whose result is here */
	struct fk_desc desc[MAX_MEMBERS];
	/* then members x payload bytes of contributions, then payload bytes of result */
};

struct fk_comm {
	struct fk_ctx *ctx;
	int rank, size;
	char *base;
	size_t len;
	struct fk_hdr *hdr;
	size_t slot_bytes;
	uint64_t seq;    /* operations started by this member */
	int outstanding; /* started and not freed */
};

enum { RQ_WAIT_SLOT, RQ_POSTED, RQ_DONE };

struct fk_req {
	struct fk_comm *comm;
	uint64_t seq;
	int state;
	struct fk_desc d;
	const char *src;
	char *dst;
};

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static struct fk_slot *slot_of(struct fk_comm *c, uint64_t seq) {
	char *s0 = c->base + align64(sizeof(struct fk_hdr));
	return (struct fk_slot *)(s0 + ((seq - 1) % (uint64_t)c->hdr->nslots) * c->slot_bytes);
}

static char *slot_data(struct fk_slot *s, int m, int payload) {
	return (char *)s + align64(sizeof *s) + (size_t)m * (size_t)payload;
}

static char *slot_result(struct fk_slot *s, int members, int payload) {
	return (char *)s + align64(sizeof *s) + (size_t)members * (size_t)payload;
}

static long env_long(const char *name, long def) {
	const char *v = getenv(name);
	if (!v || !*v) return def;
	char *end;
	long n = strtol(v, &end, 10);
	if (end == v) return def;
	switch (*end) {
	case 'k': case 'K': n <<= 10; break;
	case 'm': case 'M': n <<= 20; break;
	}
	return n;
}

/* say writes one diagnostic line to stderr in a single write, so that
 * mpirun's output tagging does not split it. */
static void say(const char *fmt, ...) {
	char line[512];
	int n = snprintf(line, sizeof line, "fake libsharp_coll (EMULATED switch): ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, (size_t)n);
	(void)w;
}

const char *sharp_coll_strerror(int e) {
	switch (e) {
	case E_OK: return "success (emulated)";
	case E_NOT_SUPP: return "not supported (emulated switch)";
	case E_NOMEM: return "no memory (emulated switch)";
	case E_GROUP_ALLOC: return "group alloc error (emulated switch)";
	case E_CONN_TREE: return "no connection to the emulated switch (it is gone)";
	case E_OOB: return "out-of-band collective error (emulated switch)";
	case E_INVAL: return "invalid value (emulated switch)";
	case E_JOB: return "cannot create job (emulated switch)";
	case E_NO_RESOURCE: return "resource not available: too many outstanding operations (emulated switch)";
	}
	return "error (emulated switch)";
}

int sharp_coll_init(struct sharp_coll_init_spec *spec, struct fk_ctx **out) {
	if (!spec || !out || !spec->oob_colls.bcast || !spec->oob_colls.barrier || !spec->oob_colls.gather)
		return E_INVAL;
	if (spec->world_size < 1 || spec->world_size > MAX_MEMBERS || spec->world_rank < 0 ||
	    spec->world_rank >= spec->world_size)
		return E_INVAL;
	struct fk_ctx *c = calloc(1, sizeof *c);
	if (!c) return E_NOMEM;
	c->rank = spec->world_rank;
	c->size = spec->world_size;
	c->job = spec->job_id;
	c->oob = spec->oob_colls;
	c->oob_ctx = spec->oob_ctx;
	c->payload = (int)env_long("DPML_FAKESHARP_PAYLOAD", 1024);
	c->osts = (int)env_long("DPML_FAKESHARP_OSTS", 4);
	c->kill_after = env_long("DPML_FAKESHARP_KILL_AFTER", 0);
	if (c->payload < 8) c->payload = 8;
	if (c->osts < 1) c->osts = 1;
	/* Like the real library, use the out-of-band collectives: every member
	 * must have been given the same job id. */
	uint64_t job = c->job;
	if (c->oob.bcast(c->oob_ctx, &job, sizeof job, 0) != 0 || c->oob.barrier(c->oob_ctx) != 0) {
		free(c);
		return E_OOB;
	}
	if (job != c->job) {
		say("members were given different job ids (%llu vs %llu)", (unsigned long long)job, (unsigned long long)c->job);
		free(c);
		return E_JOB;
	}
	*out = c;
	return E_OK;
}

int sharp_coll_finalize(struct fk_ctx *c) {
	free(c);
	return E_OK;
}

int sharp_coll_caps_query(struct fk_ctx *c, struct sharp_coll_caps *caps) {
	if (!c || !caps) return E_INVAL;
	memset(caps, 0, sizeof *caps);
	caps->sharp_pkt_version = 1;
	for (int dt = 0; dt < DT_NULL; dt++)
		if (dt_size(dt)) caps->support_mask.dtypes |= 1ULL << dt;
	for (int op = 0; op < OP_NULL; op++)
		if (op_ok(op)) caps->support_mask.reduce_ops |= 1ULL << op;
	caps->resources.max_osts = c->osts;
	caps->resources.user_data_per_ost = c->payload;
	caps->resources.max_groups = 8;
	caps->resources.max_group_channels = 1;
	caps->resources.osts_per_group = c->osts;
	return E_OK;
}

int sharp_coll_reg_mr(struct fk_ctx *c, void *buf, size_t size, void **mr) {
	if (!c || !buf || !mr) return E_INVAL;
	for (int i = 0; i < MAX_REGS; i++) {
		if (!c->regs[i].used) {
			c->regs[i].p = buf;
			c->regs[i].n = size;
			c->regs[i].used = 1;
			*mr = &c->regs[i];
			return E_OK;
		}
	}
	return E_NO_RESOURCE;
}

int sharp_coll_dereg_mr(struct fk_ctx *c, void *mr) {
	if (!c || !mr) return E_INVAL;
	for (int i = 0; i < MAX_REGS; i++) {
		if ((void *)&c->regs[i] == mr && c->regs[i].used) {
			c->regs[i].used = 0;
			return E_OK;
		}
	}
	return E_INVAL;
}

int sharp_coll_progress(struct fk_ctx *c) { return c ? E_OK : E_INVAL; }

/* ---- The switch process. ---- */

#define REDUCE(T)                                                              \
	do {                                                                       \
		T *o = (T *)res;                                                       \
		for (int m = 1; m < h->members; m++) {                                 \
			const T *x = (const T *)slot_data(s, m, h->payload);               \
			for (uint64_t i = 0; i < n; i++) {                                 \
				switch (op) {                                                  \
				case OP_SUM: o[i] = (T)(o[i] + x[i]); break;                   \
				case OP_MAX: if (x[i] > o[i]) o[i] = x[i]; break;              \
				case OP_MIN: if (x[i] < o[i]) o[i] = x[i]; break;              \
				case OP_LAND: o[i] = (T)((o[i] != 0) && (x[i] != 0)); break;   \
				case OP_LOR: o[i] = (T)((o[i] != 0) || (x[i] != 0)); break;    \
				case OP_LXOR: o[i] = (T)((o[i] != 0) != (x[i] != 0)); break;   \
				}                                                              \
			}                                                                  \
		}                                                                      \
	} while (0)

#define REDUCE_BITS(T)                                                         \
	do {                                                                       \
		T *o = (T *)res;                                                       \
		for (int m = 1; m < h->members; m++) {                                 \
			const T *x = (const T *)slot_data(s, m, h->payload);               \
			for (uint64_t i = 0; i < n; i++) {                                 \
				switch (op) {                                                  \
				case OP_BAND: o[i] &= x[i]; break;                             \
				case OP_BOR: o[i] |= x[i]; break;                              \
				case OP_BXOR: o[i] ^= x[i]; break;                             \
				}                                                              \
			}                                                                  \
		}                                                                      \
	} while (0)

/* reduce folds the members' contributions of slot s into its result, in
 * member order. Logical ops give 0 or 1, as in MPI. */
static void reduce(struct fk_hdr *h, struct fk_slot *s, struct fk_desc d) {
	char *res = slot_result(s, h->members, h->payload);
	uint64_t n = d.length;
	int op = d.op;
	memcpy(res, slot_data(s, 0, h->payload), n * (uint64_t)dt_size(d.dtype));
	int bits = op == OP_BAND || op == OP_BOR || op == OP_BXOR;
	switch (d.dtype) {
	case DT_I8: if (bits) REDUCE_BITS(int8_t); else REDUCE(int8_t); break;
	case DT_U8: if (bits) REDUCE_BITS(uint8_t); else REDUCE(uint8_t); break;
	case DT_I16: if (bits) REDUCE_BITS(int16_t); else REDUCE(int16_t); break;
	case DT_U16: if (bits) REDUCE_BITS(uint16_t); else REDUCE(uint16_t); break;
	case DT_I32: if (bits) REDUCE_BITS(int32_t); else REDUCE(int32_t); break;
	case DT_U32: if (bits) REDUCE_BITS(uint32_t); else REDUCE(uint32_t); break;
	case DT_I64: if (bits) REDUCE_BITS(int64_t); else REDUCE(int64_t); break;
	case DT_U64: if (bits) REDUCE_BITS(uint64_t); else REDUCE(uint64_t); break;
	case DT_F32: REDUCE(float); break;
	case DT_F64: REDUCE(double); break;
	}
}

static int alive(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

static void pause_a_little(long idle) {
	if (idle < 200) {
		sched_yield();
		return;
	}
	struct timespec ts = {0, idle < 5000 ? 20000 : 200000};
	nanosleep(&ts, NULL);
}

/* switch_loop serves the group until every member has left or one has
 * disappeared. It runs in a forked child of a multi-threaded process, so
 * it uses no locks, no allocation and no stdio. */
static void switch_loop(struct fk_comm *c) {
	struct fk_hdr *h = c->hdr;
	atomic_store(&h->switch_pid, (int32_t)getpid());
	uint64_t next = 1;
	long idle = 0;
	struct timespec last;
	clock_gettime(CLOCK_MONOTONIC, &last);
	for (;;) {
		struct fk_slot *s = slot_of(c, next);
		int all = 1;
		for (int m = 0; m < h->members && all; m++)
			all = atomic_load_explicit(&s->arrived[m], memory_order_acquire) == next;
		if (all && h->kill_after > 0 && atomic_load(&h->completed) >= (uint64_t)h->kill_after) {
			/* The fault: die with this operation in flight (every member
			 * has contributed and waits for the result), as a switch that
			 * fails mid-run. Later operations are refused. */
			atomic_store(&h->state, 1);
			kill(getpid(), SIGKILL);
		}
		if (all) {
			struct fk_desc d = s->desc[0];
			for (int m = 1; m < h->members; m++) {
				if (memcmp(&s->desc[m], &d, sizeof d) != 0) {
					/* Members called with different arguments: nothing
					 * sensible to compute; stop, as a failed switch. */
					atomic_store(&h->state, 3);
					_exit(3);
				}
			}
			reduce(h, s, d);
			atomic_store_explicit(&s->done, next, memory_order_release);
			atomic_fetch_add(&h->completed, 1);
			next++;
			idle = 0;
			continue;
		}
		idle++;
		pause_a_little(idle);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - last.tv_sec) * 1000000000L + (now.tv_nsec - last.tv_nsec) < 10000000L)
			continue;
		last = now;
		int gone = 0, left = 0;
		for (int m = 0; m < h->members; m++) {
			if (atomic_load(&h->left[m])) {
				left++;
			} else if (!alive(atomic_load(&h->pids[m]))) {
				gone = 1;
			}
		}
		if (left == h->members) _exit(0);
		if (gone) {
			atomic_store(&h->state, 2);
			_exit(2);
		}
	}
}

/* start_switch forks the switch (twice: the rank reaps the middle process
 * at once, and the switch is nobody's child to reap). */
static int start_switch(struct fk_comm *c) {
	pid_t mid = fork();
	if (mid < 0) return -1;
	if (mid == 0) {
		/* Drop the parent's signal handlers (the Go runtime's, MPI's):
		 * they have nothing to run on in this process. */
		for (int sig = 1; sig < 65; sig++) {
			if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		pid_t sw = fork();
		if (sw == 0) switch_loop(c);
		_exit(sw < 0 ? 1 : 0);
	}
	int st = 0;
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int sharp_coll_comm_init(struct fk_ctx *ctx, struct sharp_coll_comm_init_spec *spec, struct fk_comm **out) {
	if (!ctx || !spec || !out) return E_INVAL;
	if (spec->size < 1 || spec->size > MAX_MEMBERS || spec->rank < 0 || spec->rank >= spec->size)
		return E_INVAL;
	struct fk_comm *c = calloc(1, sizeof *c);
	if (!c) return E_NOMEM;
	c->ctx = ctx;
	c->rank = spec->rank;
	c->size = spec->size;
	int nslots = ctx->osts;
	c->slot_bytes = align64(align64(sizeof(struct fk_slot)) + (size_t)(spec->size + 1) * (size_t)ctx->payload);
	c->len = align64(sizeof(struct fk_hdr)) + (size_t)nslots * c->slot_bytes;

	/* Rank 0 creates the segment and broadcasts its name (empty: failed). */
	char name[128];
	memset(name, 0, sizeof name);
	int fd = -1;
	if (c->rank == 0) {
		static _Atomic int counter;
		const char *job = getenv("DPML_JOB");
		snprintf(name, sizeof name, "/dev/shm/dpml-%s-fakesharp-%d-%d", job && *job ? job : "x", (int)getpid(),
		         atomic_fetch_add(&counter, 1));
		fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)c->len) != 0) {
			if (fd >= 0) {
				close(fd);
				unlink(name);
				fd = -1;
			}
			name[0] = 0;
		}
	}
	if (spec->size > 1 && ctx->oob.bcast(spec->oob_ctx, name, sizeof name, 0) != 0) {
		if (fd >= 0) {
			close(fd);
			unlink(name);
		}
		free(c);
		return E_OOB;
	}
	int ok = name[0] != 0;
	if (ok && c->rank != 0) fd = open(name, O_RDWR);
	if (fd >= 0) {
		void *p = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED) {
			ok = 0;
		} else {
			c->base = p;
		}
	} else {
		ok = 0;
	}
	if (ok && c->rank == 0) {
		struct fk_hdr *h = (struct fk_hdr *)c->base;
		memset(h, 0, sizeof *h);
		h->members = spec->size;
		h->payload = ctx->payload;
		h->nslots = nslots;
		h->kill_after = ctx->kill_after;
		atomic_store(&h->switch_pid, 0);
		h->magic = FK_MAGIC;
	}
	/* Rank 0 learns whether every member mapped the segment (gather), then
	 * tells them all (bcast): all members return the same status. */
	int oks[MAX_MEMBERS] = {0}; /* zero: a gather that delivers nothing fails the group */
	int all = ok;
	if (spec->size > 1) {
		if (ctx->oob.gather(spec->oob_ctx, 0, &ok, oks, sizeof ok) != 0) {
			all = -1;
		} else if (c->rank == 0) {
			for (int m = 0; m < spec->size; m++) all = all && oks[m];
		}
		if (all >= 0 && ctx->oob.bcast(spec->oob_ctx, &all, sizeof all, 0) != 0) all = -1;
	}
	/* Every member has opened the name (or failed): it can go now. */
	if (c->rank == 0 && name[0]) unlink(name);
	if (all == 1) {
		c->hdr = (struct fk_hdr *)c->base;
		atomic_store(&c->hdr->pids[c->rank], (int32_t)getpid());
		if (spec->size > 1 && ctx->oob.barrier(spec->oob_ctx) != 0) all = -1;
	}
	if (all == 1 && c->rank == 0 && start_switch(c) != 0) {
		atomic_store(&c->hdr->state, 1);
		say("cannot start the switch process: %s", strerror(errno));
	}
	if (all != 1) {
		if (c->base) munmap(c->base, c->len);
		free(c);
		return all < 0 ? E_OOB : E_GROUP_ALLOC;
	}
	*out = c;
	return E_OK;
}

int sharp_coll_comm_destroy(struct fk_comm *c) {
	if (!c) return E_INVAL;
	atomic_store(&c->hdr->left[c->rank], 1);
	munmap(c->base, c->len);
	free(c);
	return E_OK;
}

static int registered(struct fk_ctx *ctx, void *mr, const void *p, size_t n) {
	for (int i = 0; i < MAX_REGS; i++) {
		if ((void *)&ctx->regs[i] == mr && ctx->regs[i].used)
			return (const char *)p >= ctx->regs[i].p && (const char *)p + n <= ctx->regs[i].p + ctx->regs[i].n;
	}
	return 0;
}

static int switch_down(struct fk_hdr *h) {
	return atomic_load(&h->state) != 0;
}

/* try_post writes the request's contribution once its slot is free: every
 * member has taken the result of the operation nslots earlier. */
static void try_post(struct fk_req *r) {
	struct fk_comm *c = r->comm;
	struct fk_hdr *h = c->hdr;
	struct fk_slot *s = slot_of(c, r->seq);
	if (r->seq > (uint64_t)h->nslots) {
		uint64_t prev = r->seq - (uint64_t)h->nslots;
		for (int m = 0; m < h->members; m++)
			if (atomic_load_explicit(&s->consumed[m], memory_order_acquire) < prev) return;
	}
	memcpy(slot_data(s, c->rank, h->payload), r->src, r->d.length * (uint64_t)dt_size(r->d.dtype));
	s->desc[c->rank] = r->d;
	atomic_store_explicit(&s->arrived[c->rank], r->seq, memory_order_release);
	r->state = RQ_POSTED;
}

int sharp_coll_do_allreduce_nb(struct fk_comm *c, struct sharp_coll_reduce_spec *spec, void **handle) {
	if (!c || !spec || !handle) return E_INVAL;
	*handle = NULL;
	struct fk_hdr *h = c->hdr;
	if (switch_down(h)) return E_CONN_TREE;
	if (spec->sbuf_desc.type != 0 || spec->rbuf_desc.type != 0 || spec->sbuf_desc.mem_type != 0 ||
	    spec->rbuf_desc.mem_type != 0)
		return E_NOT_SUPP;
	int es = dt_size(spec->dtype);
	if (!es || !op_ok(spec->op)) return E_NOT_SUPP;
	size_t bytes = spec->length * (size_t)es;
	if (bytes > (size_t)h->payload) {
		say("operation of %zu bytes refused: the payload limit is %d bytes", bytes, h->payload);
		return E_INVAL;
	}
	if (spec->sbuf_desc.buffer.length < bytes || spec->rbuf_desc.buffer.length < bytes ||
	    !registered(c->ctx, spec->sbuf_desc.buffer.mem_handle, spec->sbuf_desc.buffer.ptr, bytes) ||
	    !registered(c->ctx, spec->rbuf_desc.buffer.mem_handle, spec->rbuf_desc.buffer.ptr, bytes)) {
		say("operation of %zu bytes refused: its buffers are not inside their registered memory", bytes);
		return E_INVAL;
	}
	if (c->outstanding >= h->nslots) {
		say("operation refused: %d operations outstanding, the limit is %d", c->outstanding, h->nslots);
		return E_NO_RESOURCE;
	}
	struct fk_req *r = calloc(1, sizeof *r);
	if (!r) return E_NOMEM;
	r->comm = c;
	r->seq = ++c->seq;
	r->d.dtype = spec->dtype;
	r->d.op = spec->op;
	r->d.length = spec->length;
	r->src = spec->sbuf_desc.buffer.ptr;
	r->dst = spec->rbuf_desc.buffer.ptr;
	c->outstanding++;
	try_post(r);
	*handle = r;
	return E_OK;
}

int sharp_coll_req_test(void *handle) {
	struct fk_req *r = handle;
	if (!r) return 1;
	if (r->state == RQ_DONE) return 1;
	if (r->state == RQ_WAIT_SLOT) {
		try_post(r);
		if (r->state != RQ_POSTED) return 0;
	}
	struct fk_comm *c = r->comm;
	struct fk_hdr *h = c->hdr;
	struct fk_slot *s = slot_of(c, r->seq);
	if (atomic_load_explicit(&s->done, memory_order_acquire) != r->seq) return 0;
	memcpy(r->dst, slot_result(s, h->members, h->payload), r->d.length * (uint64_t)dt_size(r->d.dtype));
	atomic_store_explicit(&s->consumed[c->rank], r->seq, memory_order_release);
	r->state = RQ_DONE;
	return 1;
}

int sharp_coll_req_free(void *handle) {
	struct fk_req *r = handle;
	if (!r) return E_INVAL;
	r->comm->outstanding--;
	free(r);
	return E_OK;
}
