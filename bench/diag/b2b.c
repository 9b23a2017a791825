// b2b.c: back-to-back MPI_Allreduce latency, the call pattern of OSU and
// IMB (no barrier between calls), for quick A/B runs of libdpml.so builds
// and settings on the device (bench/diag/quick.sh). The full client with
// patterns and variants in one run is bin/dpmlbench-c.
//
//	mpicc -O2 -o b2b bench/diag/b2b.c
//	mpirun -np 32 --bind-to core ./b2b [reps] [max-bytes]
//
// B2B_PASSES=2 in the environment runs the whole sweep twice and prints
// only the last pass (steady state, after any start-up transient).
// B2B_MINCALLS=n makes every batch at least n calls (a batch of few calls
// also measures how late the ranks left the barrier before it);
// B2B_NOBARRIER=1 drops that barrier (batches follow each other).
// Per size: a warm-up batch, then reps batches of n calls (n chosen so a
// batch takes about 2 ms, agreed by a broadcast); a batch's time is the
// slowest rank's average per call. Prints "bytes median_us min_us" over
// batches. float32 sum of small integers: every result is checked exactly.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmpd(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int reps = argc > 1 ? atoi(argv[1]) : 7;
	long maxb = argc > 2 ? atol(argv[2]) : 64 << 10;
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long maxn = maxb / 4 > 0 ? maxb / 4 : 1;
	float *send = malloc(maxn * 4), *recv = malloc(maxn * 4);
	double *t = malloc(reps * sizeof *t);
	for (long i = 0; i < maxn; i++) send[i] = (float)((rank + i) % 5);
	if (rank == 0) printf("# b2b MPI_Allreduce float sum, %d ranks\n# bytes median_us min_us\n", size);
	long bad = 0;
	int passes = getenv("B2B_PASSES") ? atoi(getenv("B2B_PASSES")) : 1;
	int mincalls = getenv("B2B_MINCALLS") ? atoi(getenv("B2B_MINCALLS")) : 10;
	int nobarrier = getenv("B2B_NOBARRIER") != NULL;
	for (int pass = 1; pass <= passes; pass++)
	for (long b = 4; b <= maxb; b *= 4) {
		int n = (int)(b / 4);
		// Calls per batch: about 2 ms, at least 10, from a timed warm-up.
		double t0 = MPI_Wtime();
		for (int k = 0; k < 20; k++) MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double per = (MPI_Wtime() - t0) / 20;
		int calls = per > 0 ? (int)(2e-3 / per) : 1000;
		if (calls < mincalls) calls = mincalls;
		if (calls > 20000) calls = 20000;
		MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
		for (int r = 0; r < reps; r++) {
			if (!nobarrier) MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			for (int k = 0; k < calls; k++) MPI_Allreduce(send, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			double mine = (MPI_Wtime() - t0) / calls;
			MPI_Allreduce(&mine, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		}
		for (int i = 0; i < n; i++) {
			// sum over ranks q of (q + i) % 5
			long want = 0;
			for (int q = 0; q < size; q++) want += (q + i) % 5;
			if (recv[i] != (float)want) bad++;
		}
		qsort(t, reps, sizeof *t, cmpd);
		if (rank == 0 && pass == passes) printf("%ld %.3f %.3f\n", b, 1e6 * t[reps / 2], 1e6 * t[0]);
	}
	long allbad = 0;
	MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0 && allbad) printf("# WRONG RESULTS: %ld elements\n", allbad);
	free(send);
	free(recv);
	free(t);
	MPI_Finalize();
	return allbad != 0;
}
