/* lines: how a small allreduce above one cache line should move its data
 * in plain C. The engine's tree carries up to 56 bytes in the
 * flag's own line; above that a partial sits in a slot apart from its flag,
 * and on a 16-core node the tree's time jumped from 2.0 us at 32 B to 3.0 us at
 * 64 B on 16 cores. This program separates the layouts from the engine:
 *
 *   sep   a flag line per rank plus a separate data area (the engine's
 *         slot path): the reader spins on the flag, then loads the data.
 *   tail  the data lines followed by the flag line, contiguous.
 *   ll    every 64-byte line carries 56 bytes and its own sequence number
 *         (the engine's inline line, repeated): the reader polls the
 *         sequence numbers of all the lines in one pass without an early
 *         exit, so their transfers overlap, then reads the payload.
 *   llseq as ll, but the reader waits for the lines one after another.
 *
 * Every variant: gather over a radix-4 heap rooted at local rank 0, fold in
 * child order, flat release (every rank reads rank 0's result, with the
 * same layout). Sequence numbers only grow; a rank writes its partial of
 * g+1 only after it read the result of g, so one buffer per rank suffices.
 * Back-to-back calls, max over ranks of each rank's average, median over
 * rounds, MPI_Allreduce of the same size in every round. Results checked.
 *
 *   mpirun -np 16 --bind-to core lines [-rounds 5] [-iters 20000]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64
#define PAY 7     /* doubles per line beside the sequence number */
#define MAXD 128  /* doubles per message at most (1 KiB) */
#define MAXL ((MAXD + PAY - 1) / PAY)

typedef struct {
    volatile uint64_t seq;
    double d[PAY];
} __attribute__((aligned(LINE))) line;

/* one rank's area: MAXL ll lines, or a flag line and MAXD doubles */
typedef struct {
    line l[MAXL + 1];
} area;

static int me, np;
static area *up, *down; /* np areas, and the root's result area */

static inline void wait_seq(volatile uint64_t *s, uint64_t g) {
    while (__atomic_load_n(s, __ATOMIC_ACQUIRE) < g) {
    }
}

/* wait until every line of a (nl lines) reaches g: all loads in one pass */
static inline void wait_all(area *a, int nl, uint64_t g) {
    for (;;) {
        uint64_t m = UINT64_MAX;
        for (int i = 0; i < nl; i++) {
            uint64_t s = __atomic_load_n(&a->l[i].seq, __ATOMIC_ACQUIRE);
            m = s < m ? s : m;
        }
        if (m >= g) return;
    }
}

static inline void wait_each(area *a, int nl, uint64_t g) {
    for (int i = 0; i < nl; i++) wait_seq(&a->l[i].seq, g);
}

/* data of a sep/tail area: the doubles after (sep) or before (tail) the flag */
static inline double *sep_data(area *a) { return (double *)&a->l[1]; }
static inline volatile uint64_t *sep_flag(area *a) { return &a->l[0].seq; }
static inline double *tail_data(area *a) { return (double *)&a->l[0]; }
static inline volatile uint64_t *tail_flag(area *a, int n) {
    return &a->l[(n * 8 + LINE - 1) / LINE].seq;
}

enum { SEP, TAIL, LL, LLSEQ, NMODE };
static const char *mname[] = {"sep", "tail", "ll", "llseq"};

static void ll_write(area *a, const double *v, int n, uint64_t g) {
    for (int i = 0, j = 0; j < n; i++) {
        int k = 0;
        for (; k < PAY && j < n; k++, j++) a->l[i].d[k] = v[j];
        __atomic_store_n(&a->l[i].seq, g, __ATOMIC_RELEASE);
    }
}

static void ll_add(area *a, double *acc, int n) {
    for (int i = 0, j = 0; j < n; i++)
        for (int k = 0; k < PAY && j < n; k++, j++) acc[j] += a->l[i].d[k];
}

static void ll_read(area *a, double *v, int n) {
    for (int i = 0, j = 0; j < n; i++)
        for (int k = 0; k < PAY && j < n; k++, j++) v[j] = a->l[i].d[k];
}

static void call(int mode, const double *in, double *out, int n, uint64_t g) {
    const int r = 4;
    int nl = (n + PAY - 1) / PAY;
    double acc[MAXD];
    for (int j = 0; j < n; j++) acc[j] = in[j];
    for (int c = r * me + 1; c <= r * me + r && c < np; c++) {
        area *a = &up[c];
        switch (mode) {
        case SEP: wait_seq(sep_flag(a), g); for (int j = 0; j < n; j++) acc[j] += sep_data(a)[j]; break;
        case TAIL: wait_seq(tail_flag(a, n), g); for (int j = 0; j < n; j++) acc[j] += tail_data(a)[j]; break;
        case LL: wait_all(a, nl, g); ll_add(a, acc, n); break;
        case LLSEQ: wait_each(a, nl, g); ll_add(a, acc, n); break;
        }
    }
    area *mine = me == 0 ? down : &up[me];
    switch (mode) {
    case SEP: memcpy(sep_data(mine), acc, n * 8); __atomic_store_n(sep_flag(mine), g, __ATOMIC_RELEASE); break;
    case TAIL: memcpy(tail_data(mine), acc, n * 8); __atomic_store_n(tail_flag(mine, n), g, __ATOMIC_RELEASE); break;
    default: ll_write(mine, acc, n, g);
    }
    if (me == 0) {
        memcpy(out, acc, n * 8);
        return;
    }
    switch (mode) {
    case SEP: wait_seq(sep_flag(down), g); memcpy(out, sep_data(down), n * 8); break;
    case TAIL: wait_seq(tail_flag(down, n), g); memcpy(out, tail_data(down), n * 8); break;
    case LL: wait_all(down, nl, g); ll_read(down, out, n); break;
    case LLSEQ: wait_each(down, nl, g); ll_read(down, out, n); break;
    }
}

static double maxavg(double t, long iters) {
    double a = t / iters * 1e6, m;
    MPI_Allreduce(&a, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = 5;
    long iters = 20000;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-rounds")) rounds = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "-iters")) iters = atol(argv[i + 1]);
    }
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &me);
    MPI_Comm_size(node, &np);
    int wsize;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize != np) {
        if (me == 0) fprintf(stderr, "lines: one node only\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win win;
    char *base;
    MPI_Aint sz = me == 0 ? (MPI_Aint)(np + 2) * sizeof(area) : 0;
    MPI_Win_allocate_shared(sz, 1, MPI_INFO_NULL, node, &base, &win);
    if (me != 0) {
        MPI_Aint s;
        int du;
        MPI_Win_shared_query(win, 0, &s, &du, &base);
    }
    area *a0 = (area *)(((uintptr_t)base + LINE - 1) & ~(uintptr_t)(LINE - 1));
    up = a0;
    down = a0 + np;
    if (me == 0) memset(a0, 0, (np + 1) * sizeof(area));
    MPI_Barrier(node);

    int ns[] = {1, 7, 8, 16, 32, 64, 128}; /* doubles: 8 B .. 1 KiB */
    int nsz = sizeof ns / sizeof ns[0];
    uint64_t g = 0;
    double *res = calloc((size_t)rounds * (NMODE + 1) * nsz, sizeof(double));
    double in[MAXD], out[MAXD];
    for (int j = 0; j < MAXD; j++) in[j] = me + 1 + j;
    for (int k = 0; k < rounds; k++) {
        for (int si = 0; si < nsz; si++) {
            int n = ns[si];
            for (int v = 0; v <= NMODE; v++) {
                /* the layouts put flags where others put data: start each
                 * variant from zeroed areas */
                MPI_Barrier(MPI_COMM_WORLD);
                memset(&up[me], 0, sizeof(area));
                if (me == 0) memset(down, 0, sizeof(area));
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = 0;
                long bad = 0;
                for (long it = -iters / 10; it < iters; it++) {
                    if (it == 0) t0 = MPI_Wtime();
                    if (v == NMODE) {
                        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                    } else {
                        g++;
                        call(v, in, out, n, g);
                    }
                    /* sum over ranks of (rank+1+j) */
                    if (out[0] != (double)np * (np + 1) / 2 || out[n - 1] != (double)np * (np + 1) / 2 + (double)np * (n - 1)) bad++;
                }
                double t = MPI_Wtime() - t0;
                long allbad;
                MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
                if (allbad) {
                    if (me == 0) fprintf(stderr, "lines: %s n %d: %ld wrong results\n", v == NMODE ? "mpi" : mname[v], n, allbad);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                res[(k * (NMODE + 1) + v) * nsz + si] = maxavg(t, iters);
            }
        }
    }
    if (me == 0) {
        printf("# lines: %d ranks, %ld b2b calls per round, median of %d rounds, us per call (max over ranks of the average); radix-4 gather, flat release\n", np, iters, rounds);
        printf("%-8s", "layout");
        for (int si = 0; si < nsz; si++) printf(" %8dB", ns[si] * 8);
        printf("\n");
        double *col = malloc(rounds * sizeof(double));
        for (int v = 0; v <= NMODE; v++) {
            printf("%-8s", v == NMODE ? "mpi" : mname[v]);
            for (int si = 0; si < nsz; si++) {
                for (int k = 0; k < rounds; k++) col[k] = res[(k * (NMODE + 1) + v) * nsz + si];
                qsort(col, rounds, sizeof(double), cmp);
                printf(" %9.3f", col[rounds / 2]);
            }
            printf("\n");
        }
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
