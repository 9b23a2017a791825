// series.c: the time of every call of a back-to-back MPI_Allreduce run, to
// find where a plan's slow calls fall (which calls, how often, how slow).
// With libdpml.so preloaded, a tuned key enters Go once per stride and
// commits once per batch of samples; a fixed plan never does. If the slow
// calls sit at a period, the period names their cause.
//
//	mpicc -O2 -o series bench/diag/series/series.c
//	mpirun -np 16 --bind-to core [-x LD_PRELOAD=.../libdpml.so] ./series BYTES CALLS SKIP [ALT]
//
// With ALT > 0 the timed calls come in batches of ALT, each after ALT
// untimed calls of the MPI library's own allreduce (PMPI_Allreduce, which
// libdpml.so does not see), as a benchmark that interleaves plans makes
// them; the output then also gives the mean time by position in the batch.
//
// Each rank times each call (MPI_Wtime); the per-call time is the slowest
// rank's (PMPI_Allreduce MAX after the run, not intercepted). The first
// SKIP calls (tuning, warm-up) are left out. Prints the median, the mean,
// the slow calls (over 3x the median, and over 5 us more than it): their
// count, their share of the total time, and how their indices fall modulo
// 64, 256, 1024 and 4096 (the largest class counts), then the 40 slowest
// calls' indices and times. float32 sum of small integers: every result
// is checked exactly.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int cmpd(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	long bytes = argc > 1 ? atol(argv[1]) : 64;
	long calls = argc > 2 ? atol(argv[2]) : 40000;
	long skip = argc > 3 ? atol(argv[3]) : 10000;
	long alt = argc > 4 ? atol(argv[4]) : 0;
	float *other = malloc((bytes / 4 > 0 ? bytes / 4 : 1) * 4);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long n = bytes / 4 > 0 ? bytes / 4 : 1;
	float *send = malloc(n * 4), *recv = malloc(n * 4);
	double *t = malloc(calls * sizeof *t), *mx = malloc(calls * sizeof *mx);
	for (long i = 0; i < n; i++) send[i] = (float)((rank + i) % 5);
	// Touch every page of the time arrays now: a first write inside the
	// loop page-faults once per 512 calls and would read as a slow call.
	memset(t, 0, calls * sizeof *t), memset(mx, 0, calls * sizeof *mx);
	long bad = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	// Context switches of the whole process (every thread: the MPI
	// thread, and the Go runtime's threads under libdpml.so) over the
	// loop, PMPI batches included.
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	double prev = MPI_Wtime();
	for (long c = 0; c < calls; c++) {
		if (alt > 0 && c % alt == 0) {
			for (long j = 0; j < alt; j++) PMPI_Allreduce(send, other, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			prev = MPI_Wtime();
		}
		MPI_Allreduce(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double now = MPI_Wtime();
		t[c] = now - prev;
		prev = now;
	}
	getrusage(RUSAGE_SELF, &ru1);
	long sw[2] = {ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw}, swt[2] = {0, 0};
	PMPI_Allreduce(sw, swt, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (long i = 0; i < n; i++) {
		long want = 0;
		for (int r = 0; r < size; r++) want += (r + i) % 5;
		if (recv[i] != (float)want) bad++;
	}
	PMPI_Allreduce(t, mx, (int)calls, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	long tb = 0;
	PMPI_Allreduce(&bad, &tb, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		long m = calls - skip;
		double *v = mx + skip, *s = malloc(m * sizeof *s);
		memcpy(s, v, m * sizeof *s);
		qsort(s, m, sizeof *s, cmpd);
		double med = s[m / 2], sum = 0, slow = 0;
		for (long i = 0; i < m; i++) sum += v[i];
		static const int mods[] = {64, 256, 1024, 4096};
		long nslow = 0, cls[4][4096];
		memset(cls, 0, sizeof cls);
		for (long i = 0; i < m; i++) {
			if (v[i] > 3 * med && v[i] > med + 5e-6) {
				nslow++, slow += v[i] - med;
				for (int k = 0; k < 4; k++) cls[k][(skip + i) % mods[k]]++;
			}
		}
		printf("bytes %ld calls %ld (after %ld) ranks %d wrong %ld\n", bytes, m, skip, size, tb);
		printf("context switches per 1000 calls per rank (whole run, every thread): voluntary %.3f involuntary %.3f\n",
		       1000.0 * swt[0] / size / calls, 1000.0 * swt[1] / size / calls);
		printf("median_us %.3f mean_us %.3f p99_us %.2f slow %ld (%.2f%% of calls) excess %.2f%% of the time\n",
		       med * 1e6, sum / m * 1e6, s[(long)(m * 0.99)] * 1e6, nslow, 100.0 * nslow / m, 100 * slow / sum);
		for (int k = 0; k < 4; k++) {
			long best = 0, at = 0;
			for (int j = 0; j < mods[k]; j++)
				if (cls[k][j] > best) best = cls[k][j], at = j;
			printf("mod %d: largest class %ld (index %ld) of %ld slow calls\n", mods[k], best, at, nslow);
		}
		// The 40 slowest calls, in call order.
		double cut = s[m - 40 > 0 ? m - 40 : 0];
		if (alt > 0) {
			// Mean per call by position in the batch: 0, 1-9, 10-99, 100-499, 500 on.
			static const long edge[] = {0, 1, 10, 100, 500, 1L << 40};
			printf("by position:");
			for (int k = 0; k < 5; k++) {
				double sm = 0;
				long cnt = 0;
				for (long i = 0; i < m; i++) {
					long pos = (skip + i) % alt;
					if (pos >= edge[k] && pos < edge[k + 1]) sm += v[i], cnt++;
				}
				if (cnt) printf(" [%ld,%ld) %.3f", edge[k], edge[k + 1] < alt ? edge[k + 1] : alt, sm / cnt * 1e6);
			}
			printf("\n");
		}
		printf("slowest:");
		for (long i = 0; i < m; i++)
			if (v[i] >= cut) printf(" %ld:%.1f", skip + i, v[i] * 1e6);
		printf("\n");
		free(s);
	}
	free(send), free(recv), free(t), free(mx), free(other);
	MPI_Finalize();
	return tb != 0;
}
