// percall: cold pattern 4 B x4 .. 16 MiB, N calls each back to back; for
// sizes >= SHOWB prints every call's max-over-ranks time (us), in order.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, np; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &np);
	int N = getenv("N") ? atoi(getenv("N")) : 100;
	long maxb = 16L << 20, showb = getenv("SHOWB") ? atol(getenv("SHOWB")) : (256 << 10);
	float *s = calloc(maxb / 4 + 16, 4), *r = calloc(maxb / 4 + 16, 4);
	int nsz = 0; long sizes[32]; for (long b = 4; b <= maxb; b *= 4) sizes[nsz++] = b;
	double *t = calloc((size_t)nsz * N, sizeof(double)), *m = calloc((size_t)nsz * N, sizeof(double));
	MPI_Barrier(MPI_COMM_WORLD);
	for (int k = 0; k < nsz; k++) for (int i = 0; i < N; i++) {
		double t0 = MPI_Wtime();
		MPI_Allreduce(s, r, (int)(sizes[k] / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t[k * N + i] = MPI_Wtime() - t0;
	}
	PMPI_Reduce(t, m, nsz * N, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) for (int k = 0; k < nsz; k++) {
		if (sizes[k] < showb) continue;
		double sum = 0; for (int i = 0; i < N; i++) sum += m[k * N + i];
		printf("%ld mean %.0f:", sizes[k], sum / N * 1e6);
		for (int i = 0; i < N; i++) printf(" %.0f", m[k * N + i] * 1e6);
		printf("\n");
	}
	MPI_Finalize();
	return 0;
}
