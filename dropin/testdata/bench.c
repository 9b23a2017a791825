// bench.c: MPI_Allreduce latency of an unmodified C program, for comparing
// the MPI library with libdpml.so preloaded (and with dpmlbench, the Go API):
//
//	mpicc -O2 -o bench dropin/testdata/bench.c
//	bin/dpmlrun -nodes 2 -ppn 2 -- ./bench                              # MPI library
//	bin/dpmlrun -nodes 2 -ppn 2 -preload $PWD/bin/libdpml.so -- ./bench  # DPML
//
//	bench [-min BYTES] [-max BYTES] [-time SECONDS] [-type float|double|int]
//
// Sizes grow by 4x from -min to -max (default 8 B to 4 MiB). Each size runs
// a warm-up call, then batches of calls until -time (default 0.2 s) has
// passed on rank 0 (the batch count is agreed on with a broadcast, so every
// rank makes the same calls). Rank 0 prints "bytes count avg_us min_us
// max_us median_us" where avg (median) is the mean (median) over calls of
// the slowest rank's time.

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The slowest rank's time of each call (the first MAXSAMP calls of a
// size), for the median, which dpmlbench reports too.
#define MAXSAMP 100000
static double samp[MAXSAMP];
static int nsamp;

static int cmpd(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

// parse_size reads a byte count with an optional K, M or G suffix (1024s),
// as dpmlbench's flags do; anything else after the number is an error.
static long parse_size(const char *s) {
	char *end;
	long v = strtol(s, &end, 10);
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	}
	if (end == s || *end != '\0' || v < 1) {
		fprintf(stderr, "bench: bad size %s\n", s);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return v;
}

int main(int argc, char **argv) {
	long minb = 8, maxb = 4L << 20;
	double tbudget = 0.2;
	MPI_Datatype dt = MPI_DOUBLE;
	int es = 8;
	const char *tname = "double";
	MPI_Init(&argc, &argv);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-min") == 0) minb = parse_size(argv[i + 1]);
		else if (strcmp(argv[i], "-max") == 0) maxb = parse_size(argv[i + 1]);
		else if (strcmp(argv[i], "-time") == 0) tbudget = atof(argv[i + 1]);
		else if (strcmp(argv[i], "-type") == 0) {
			tname = argv[i + 1];
			if (strcmp(tname, "float") == 0) dt = MPI_FLOAT, es = 4;
			else if (strcmp(tname, "int") == 0) dt = MPI_INT, es = 4;
		}
	}
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	char *send = malloc(maxb + es), *recv = malloc(maxb + es);
	memset(send, 0, maxb + es);
	if (rank == 0) printf("# MPI_Allreduce %s sum, %d ranks\n# bytes count avg_us min_us max_us median_us\n", tname, size);
	for (long b = minb; b <= maxb; b *= 4) {
		int n = (int)(b / es);
		if (n < 1) n = 1;
		MPI_Allreduce(send, recv, n, dt, MPI_SUM, MPI_COMM_WORLD); // warm-up (and DPML setup)
		double total = 0, tmin = 1e30, tmax = 0;
		long calls = 0;
		nsamp = 0;
		int more = 1;
		double start = MPI_Wtime();
		while (more) {
			for (int k = 0; k < 10; k++) {
				MPI_Barrier(MPI_COMM_WORLD);
				double t0 = MPI_Wtime();
				MPI_Allreduce(send, recv, n, dt, MPI_SUM, MPI_COMM_WORLD);
				double t = MPI_Wtime() - t0, tm;
				MPI_Allreduce(&t, &tm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
				total += tm;
				if (tm < tmin) tmin = tm;
				if (tm > tmax) tmax = tm;
				if (nsamp < MAXSAMP) samp[nsamp++] = tm;
				calls++;
			}
			more = MPI_Wtime() - start < tbudget;
			MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
		}
		qsort(samp, nsamp, sizeof samp[0], cmpd);
		double med = nsamp % 2 ? samp[nsamp / 2] : (samp[nsamp / 2 - 1] + samp[nsamp / 2]) / 2;
		if (rank == 0) printf("%ld %d %.2f %.2f %.2f %.2f\n", (long)n * es, n, 1e6 * total / calls, 1e6 * tmin, 1e6 * tmax, 1e6 * med);
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
