// xchg asks whether a one-round exchange among the node leaders beats the
// MPI library's allreduce of their results for small messages: the step
// that bounds DPML's small calls on several nodes (on
// the device's emulated nodes the leaders' allreduce is about 25 of a
// 27 us call). Methods, interleaved per size and repetition, on the
// communicator of one leader per node (local rank 0), back to back:
//
//   allreduce  MPI_Allreduce in place (what the engine calls today)
//   exchange   one round: Irecv from and Isend to every other leader,
//              Waitall, then fold the node results in node order (the
//              same order on every leader: the same bits)
//   allgather  MPI_Allgather, then the same fold
//
// Each result is checked against the allreduce's (integer-valued doubles:
// exact). Output: CSV, one line per (size, method, repetition): the
// leaders' largest mean time per call in us. Nodes: DPML_RUN_PPN ranks
// per node in rank order (dpmlrun sets it), else MPI_Comm_split_type.
//
// Build: mpicc -O2 -o xchg xchg.c
// Run:   dpmlrun -nodes 4 -ppn 4 -- ./xchg [iters] [reps]
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, EXCHANGE, ALLGATHER, NMETHODS };
static const char *names[NMETHODS] = {"allreduce", "exchange", "allgather"};

static void fold(double *out, const double *all, int nodes, int n) {
	for (int i = 0; i < n; i++) out[i] = all[i];
	for (int k = 1; k < nodes; k++)
		for (int i = 0; i < n; i++) out[i] += all[(size_t)k * n + i];
}

static void exchange(MPI_Comm c, int me, int nodes, const double *mine, double *all, double *out, int n,
		     MPI_Request *rq) {
	int q = 0;
	for (int k = 0; k < nodes; k++)
		if (k != me) MPI_Irecv(all + (size_t)k * n, n, MPI_DOUBLE, k, 7, c, &rq[q++]);
	for (int k = 0; k < nodes; k++)
		if (k != me) MPI_Isend(mine, n, MPI_DOUBLE, k, 7, c, &rq[q++]);
	memcpy(all + (size_t)me * n, mine, (size_t)n * sizeof *mine);
	MPI_Waitall(q, rq, MPI_STATUSES_IGNORE);
	fold(out, all, nodes, n);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int iters = argc > 1 ? atoi(argv[1]) : 4000, reps = argc > 2 ? atoi(argv[2]) : 5;
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm node;
	const char *ppn = getenv("DPML_RUN_PPN");
	if (ppn != NULL && strchr(ppn, ',') == NULL && atoi(ppn) > 0)
		MPI_Comm_split(MPI_COMM_WORLD, rank / atoi(ppn), rank, &node);
	else
		MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
	int local;
	MPI_Comm_rank(node, &local);
	MPI_Comm lead;
	MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, rank, &lead);
	int me = -1, nodes = 0;
	if (lead != MPI_COMM_NULL) {
		MPI_Comm_rank(lead, &me);
		MPI_Comm_size(lead, &nodes);
	}
	MPI_Bcast(&nodes, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0) printf("# %d ranks, %d nodes, %d iterations per sample\nbytes,method,rep,us\n", size, nodes, iters);
	static const int sizes[] = {8, 64, 512, 1024, 4096};
	int bad = 0;
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		int n = sizes[s] / 8;
		double *mine = malloc(n * sizeof *mine), *ref = malloc(n * sizeof *ref), *out = malloc(n * sizeof *out);
		double *all = malloc((size_t)(nodes > 0 ? nodes : 1) * n * sizeof *all);
		MPI_Request *rq = malloc(2 * (size_t)(nodes > 0 ? nodes : 1) * sizeof *rq);
		for (int rep = 0; rep < reps; rep++) {
			for (int m0 = 0; m0 < NMETHODS; m0++) {
				int m = (m0 + rep) % NMETHODS;
				MPI_Barrier(MPI_COMM_WORLD);
				double t = 0;
				if (lead != MPI_COMM_NULL) {
					for (int i = 0; i < n; i++) mine[i] = me * 1000 + i + rep, ref[i] = mine[i];
					MPI_Allreduce(MPI_IN_PLACE, ref, n, MPI_DOUBLE, MPI_SUM, lead);
					for (int w = 0; w < 100 + iters; w++) {
						if (w == 100) t = MPI_Wtime();
						switch (m) {
						case ALLREDUCE:
							memcpy(out, mine, n * sizeof *out);
							MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_DOUBLE, MPI_SUM, lead);
							break;
						case EXCHANGE:
							exchange(lead, me, nodes, mine, all, out, n, rq);
							break;
						case ALLGATHER:
							MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, lead);
							fold(out, all, nodes, n);
							break;
						}
					}
					t = (MPI_Wtime() - t) / iters * 1e6;
					if (memcmp(out, ref, n * sizeof *out) != 0) bad++;
				}
				double tmax;
				MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
				if (rank == 0) printf("%d,%s,%d,%.3f\n", sizes[s], names[m], rep, tmax);
			}
		}
		free(mine), free(ref), free(out), free(all), free(rq);
	}
	int anybad;
	MPI_Reduce(&bad, &anybad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0 && anybad) printf("# WRONG RESULTS: %d\n", anybad);
	MPI_Finalize();
	return anybad != 0;
}
