// pause: the time per call of a program's first MPI_Allreduce calls after
// MPI_Init and an optional pause, in buckets of calls (max over ranks per
// call), and how many calls per rank entered libdpml.so's Go side (the
// calls its C layer did not run itself).
//
//	mpicc -O2 -o pause bench/cold/pause.c -ldl
//	mpirun -np 32 --bind-to core -x LD_PRELOAD=$PWD/bin/libdpml.so -x SLEEP_MS=50 ./pause
//
// Environment: CALLS (3000), BYTES (4, float32 sum), SLEEP_MS (sleep after
// MPI_Init), SPIN_MS (busy-wait instead), NATIVE=1 (call PMPI_Allreduce:
// the MPI library itself). A pause of more than 10 ms lets the Go
// runtime's monitor thread take the program thread's P, which changes
// what the next calls cost (package internal/runtime/idlethreads).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static int envi(const char *n, int d) { const char *v = getenv(n); return v && *v ? atoi(v) : d; }
int main(int argc, char **argv) {
	double tb = MPI_Wtime();
	MPI_Init(&argc, &argv);
	double ti = MPI_Wtime();
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int native = envi("NATIVE", 0), spinms = envi("SPIN_MS", 0), sleepms = envi("SLEEP_MS", 0), n = envi("CALLS", 3000), bytes = envi("BYTES", 4);
	if (sleepms) { struct timespec ts = {sleepms / 1000, (sleepms % 1000) * 1000000L}; nanosleep(&ts, NULL); }
	if (spinms) { double e = MPI_Wtime() + spinms * 1e-3; while (MPI_Wtime() < e); }
	volatile unsigned long *fc = dlsym(RTLD_DEFAULT, "dpml_fused_calls");
	PMPI_Barrier(MPI_COMM_WORLD);
	int cnt = bytes / 4 > 0 ? bytes / 4 : 1;
	float *s = calloc(cnt, 4), *r = calloc(cnt, 4);
	double *dt = malloc(n * sizeof(double)), *mx = malloc(n * sizeof(double)), *gc = malloc(n * sizeof(double)), *gs = malloc(n * sizeof(double));
	for (int i = 0; i < n; i++) {
		unsigned long f0 = fc ? *fc : 0;
		double t0 = MPI_Wtime();
		if (native) PMPI_Allreduce(s, r, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		else MPI_Allreduce(s, r, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		dt[i] = MPI_Wtime() - t0;
		gc[i] = fc && *fc == f0 ? 1 : 0;
	}
	PMPI_Reduce(dt, mx, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	PMPI_Reduce(gc, gs, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	double init = ti - tb, imax = 0;
	PMPI_Reduce(&init, &imax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		int b[] = {0, 1, 10, 30, 100, 300, 1000, 2000, n};
		double cum = 0;
		printf("init %.1f ms; bytes %d native %d sleep %d ms spin %d ms fusedsym %d\n", imax * 1e3, bytes, native, sleepms, spinms, fc != NULL);
		for (int k = 0; k + 1 < (int)(sizeof b / sizeof b[0]); k++) {
			if (b[k] >= n) break;
			int hi = b[k + 1] < n ? b[k + 1] : n;
			double sum = 0, go = 0, tmp[hi - b[k]], big = 0;
			for (int i = b[k]; i < hi; i++) sum += mx[i], go += gs[i], tmp[i - b[k]] = mx[i], big += mx[i] > 20e-6;
			qsort(tmp, hi - b[k], sizeof(double), cmpd);
			cum += sum;
			printf("calls %4d-%4d: mean %8.2f us, median %7.2f, max %8.1f, >20us %4.0f, go-calls/rank %6.2f, elapsed %8.1f us\n", b[k], hi - 1, sum / (hi - b[k]) * 1e6, tmp[(hi - b[k]) / 2] * 1e6, tmp[hi - b[k] - 1] * 1e6, big, go / size / (hi - b[k]), cum * 1e6);
		}
	}
	MPI_Finalize();
	return 0;
}
