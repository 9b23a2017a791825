/* floor: the hardware floor of a small allreduce over cache-line flags on
 * one node, in plain C, to tell what the machine allows from
 * what the engine adds.
 *
 * Every rank owns two 64-byte lines of one MPI shared-memory window: "up"
 * (a sequence number and up to 7 doubles of its subtree's partial) and
 * "down" (the same for the result). Gather: a k-ary heap of radix r rooted
 * at local rank 0; a rank waits for its children's up.seq == g, folds its
 * own value and theirs in child order, writes its up line (data, then seq
 * with release order). Release: "flat" (every rank reads rank 0's down
 * line) or a tree of radix rr (a rank waits for its parent's down line and
 * copies it into its own). Sequence numbers only grow: no resets, no
 * barrier between calls. Spin loops only (the ranks own their cores).
 *
 * Timing: back-to-back calls, max over ranks of each rank's average, in
 * rounds that interleave every variant with MPI_Allreduce of the same
 * size; the median over rounds is printed. Every result is checked.
 *
 *   mpirun -np 16 --bind-to core floor [-rounds 5] [-iters 20000]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    volatile uint64_t seq;
    double data[7];
} __attribute__((aligned(64))) line;

static int me, np;
static line *up, *down; /* np lines each */

static inline void wait_seq(volatile uint64_t *s, uint64_t g) {
    while (__atomic_load_n(s, __ATOMIC_ACQUIRE) < g) {
    }
}

/* one allreduce of n doubles (n <= 7); gather radix r, release radix rr
 * (0 = flat). */
static void tree_call(const double *in, double *out, int n, int r, int rr, uint64_t g) {
    double acc[7];
    for (int j = 0; j < n; j++) acc[j] = in[j];
    for (int c = r * me + 1; c <= r * me + r && c < np; c++) {
        wait_seq(&up[c].seq, g);
        for (int j = 0; j < n; j++) acc[j] += up[c].data[j];
    }
    if (me != 0) {
        for (int j = 0; j < n; j++) up[me].data[j] = acc[j];
        __atomic_store_n(&up[me].seq, g, __ATOMIC_RELEASE);
        int src = rr == 0 ? 0 : (me - 1) / rr;
        wait_seq(&down[src].seq, g);
        for (int j = 0; j < n; j++) acc[j] = down[src].data[j];
        if (rr != 0 && rr * me + 1 < np) { /* inner node of the release tree */
            for (int j = 0; j < n; j++) down[me].data[j] = acc[j];
            __atomic_store_n(&down[me].seq, g, __ATOMIC_RELEASE);
        }
    } else {
        for (int j = 0; j < n; j++) down[0].data[j] = acc[j];
        __atomic_store_n(&down[0].seq, g, __ATOMIC_RELEASE);
    }
    for (int j = 0; j < n; j++) out[j] = acc[j];
}

/* recursive doubling over per-round lines, double-buffered by generation
 * parity (a partner may still read round k of g while this rank writes round
 * k of g+1, never g+2); np must be a power of two. Each pair combines
 * (lower rank's partial) + (higher's), so partners hold the same bits. */
static line *rdl; /* np * 2 * LOG lines: [rank][parity][round] */
#define LOGMAX 8
static void rd_call(const double *in, double *out, int n, uint64_t g) {
    double acc[7];
    for (int j = 0; j < n; j++) acc[j] = in[j];
    int b = g & 1;
    for (int k = 0, d = 1; d < np; k++, d <<= 1) {
        int p = me ^ d;
        line *mine = &rdl[(me * 2 + b) * LOGMAX + k], *theirs = &rdl[(p * 2 + b) * LOGMAX + k];
        for (int j = 0; j < n; j++) mine->data[j] = acc[j];
        __atomic_store_n(&mine->seq, g, __ATOMIC_RELEASE);
        wait_seq(&theirs->seq, g);
        if (me < p)
            for (int j = 0; j < n; j++) acc[j] = acc[j] + theirs->data[j];
        else
            for (int j = 0; j < n; j++) acc[j] = theirs->data[j] + acc[j];
    }
    for (int j = 0; j < n; j++) out[j] = acc[j];
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
        if (me == 0) fprintf(stderr, "floor: one node only\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win win;
    line *base;
    MPI_Aint sz = me == 0 ? (MPI_Aint)(2 * np + 1 + 2 * LOGMAX * np) * sizeof(line) : 0;
    MPI_Win_allocate_shared(sz, sizeof(line), MPI_INFO_NULL, node, &base, &win);
    if (me != 0) {
        MPI_Aint s;
        int du;
        MPI_Win_shared_query(win, 0, &s, &du, &base);
    }
    /* align to a line (the window's base may not be) */
    base = (line *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
    up = base;
    down = base + np;
    rdl = base + 2 * np;
    if (me == 0) memset(base, 0, (2 + 2 * LOGMAX) * np * sizeof(line));
    int pow2 = (np & (np - 1)) == 0;
    MPI_Barrier(node);

    struct { const char *name; int r, rr; } vs[] = {
        {"flat", np, 0}, {"r2/flat", 2, 0}, {"r4/flat", 4, 0}, {"r8/flat", 8, 0},
        {"r2/r2", 2, 2}, {"r4/r4", 4, 4}, {"r8/r8", 8, 8}, {"r4/r8", 4, 8}, {"r2/r8", 2, 8}, {"rd", 0, 0},
    };
    int nv = sizeof vs / sizeof vs[0];
    int ns[] = {1, 7};
    uint64_t g = 0;
    double *res = calloc((size_t)rounds * (nv + 1) * 2, sizeof(double));
    for (int k = 0; k < rounds; k++) {
        for (int si = 0; si < 2; si++) {
            int n = ns[si];
            double in[7], out[7];
            for (int j = 0; j < 7; j++) in[j] = me + 1 + j;
            for (int v = 0; v <= nv; v++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = 0;
                long bad = 0;
                for (long it = -iters / 10; it < iters; it++) {
                    if (it == 0) t0 = MPI_Wtime();
                    if (v == nv - 1 && !pow2) {
                        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* rd needs 2^m */
                    } else if (v == nv - 1) {
                        g++;
                        rd_call(in, out, n, g);
                    } else if (v == nv) {
                        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                    } else {
                        g++;
                        tree_call(in, out, n, vs[v].r, vs[v].rr, g);
                    }
                    /* sum over ranks of (rank+1+j) */
                    if (out[0] != (double)np * (np + 1) / 2) bad++;
                }
                double t = MPI_Wtime() - t0;
                long allbad;
                MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
                if (allbad) {
                    if (me == 0) fprintf(stderr, "floor: variant %d n %d: %ld wrong results\n", v, n, allbad);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                res[(k * (nv + 1) + v) * 2 + si] = maxavg(t, iters);
            }
        }
    }
    if (me == 0) {
        printf("# floor: %d ranks, %ld b2b calls per round, median of %d rounds, us per call (max over ranks of the average)\n", np, iters, rounds);
        printf("%-10s %10s %10s\n", "variant", "8B", "56B");
        double *col = malloc(rounds * sizeof(double));
        for (int v = 0; v <= nv; v++) {
            printf("%-10s", v == nv ? "mpi" : vs[v].name);
            for (int si = 0; si < 2; si++) {
                for (int k = 0; k < rounds; k++) col[k] = res[(k * (nv + 1) + v) * 2 + si];
                qsort(col, rounds, sizeof(double), cmp);
                if (v == nv - 1 && !pow2)
                    printf(" %10s", "n/a"); /* rd needs a power of two: the MPI library ran */
                else
                    printf(" %10.3f", col[rounds / 2]);
            }
            printf("\n");
        }
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
