// samebits -o DIR: float and double sums of fixed inputs at a few sizes;
// each rank writes a hash of every result (FNV-1a over its bytes) to
// DIR/rank-N.txt. Its twin samebits/main.go makes the same calls through
// the Go API: under the same plan the two write the same lines.
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv(const void *p, size_t n) {
	const unsigned char *b = p;
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

// value is input i of rank r: not exact in binary, so the sum's bits
// depend on its order.
static double value(int r, int i) { return (double)(((long)r * 7919 + (long)i * 104729) % 10007) / 7.3; }

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc != 3 || strcmp(argv[1], "-o") != 0) {
		fprintf(stderr, "usage: samebits -o DIR\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/rank-%d.txt", argv[2], rank);
	FILE *out = fopen(path, "w");
	if (out == NULL) {
		perror(path);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	static const int counts[] = {1, 5, 100, 1000, 5000, 70000};
	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		int n = counts[c];
		float *fs = malloc(sizeof(float) * n), *fr = malloc(sizeof(float) * n);
		double *ds = malloc(sizeof(double) * n), *dr = malloc(sizeof(double) * n);
		for (int i = 0; i < n; i++) fs[i] = (float)value(rank, i), ds[i] = value(rank, i);
		for (int rep = 0; rep < 3; rep++) {
			MPI_Allreduce(fs, fr, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			MPI_Allreduce(ds, dr, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
			fprintf(out, "rank %d float32 %d call %d %016llx\n", rank, n, rep, (unsigned long long)fnv(fr, sizeof(float) * n));
			fprintf(out, "rank %d float64 %d call %d %016llx\n", rank, n, rep, (unsigned long long)fnv(dr, sizeof(double) * n));
		}
		free(fs), free(fr), free(ds), free(dr);
	}
	fclose(out);
	MPI_Finalize();
	return 0;
}
