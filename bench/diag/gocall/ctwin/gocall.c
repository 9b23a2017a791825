// gocall.c: the C twin of bench/diag/gocall (a C main program, no Go
// runtime in the process): the same timed loops and the same CSV rows, for
// the "C program" lines of the comparison. Built by `make build` into
// bin/gocall-c:
//
//	mpicc -O2 -o bin/gocall-c bench/diag/gocall/ctwin/gocall.c
//	mpirun -np 2 --bind-to core bin/gocall-c -sizes 4,8,4096 -reps 3
//
//	gocall-c [-sizes B,B,...] [-reps N] [-variants c,c-iall,c-spin] [-time SECONDS]
//	         [-min-iters N] [-max-iters N] [-spin-ns N] [-label TEXT] [-header]
//
// Variants: c (MPI_Allreduce), c-iall (MPI_Iallreduce + MPI_Test polling),
// c-spin (a busy wait of -spin-ns per call, no MPI).
// See bench/diag/gocall/main.go for the method and the columns.
#include "../probe.h"

#define MAXV 8
#define MAXS 32

static long spin_ns = 3000;

static int run_loop(int variant, void *s, void *r, int bytes, long iters) {
	switch (variant) {
	case 0: return probe_loop_block(s, r, bytes, iters);
	case 1: return probe_loop_iall(s, r, bytes, iters);
	}
	return probe_loop_spin(spin_ns, iters);
}

static int measure(int variant, int bytes, double tbudget, long miniters, long maxiters, double *vals, long *iters_out) {
	static double sbuf[1024], rbuf[1024];
	for (int i = 0; i < 1024; i++) sbuf[i] = 1;
	int rc;
	// Warm-up, timed to choose the iteration count (the smallest over
	// ranks, so every rank makes the same calls).
	long warm = 200;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	rc = run_loop(variant, sbuf, rbuf, bytes, warm);
	if (rc != MPI_SUCCESS) return rc;
	double per = (MPI_Wtime() - t0) / (double)warm;
	long iters = per > 0 ? (long)(tbudget / per) : maxiters;
	if (iters < miniters) iters = miniters;
	if (iters > maxiters) iters = maxiters;
	MPI_Allreduce(MPI_IN_PLACE, &iters, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	probe_totals a = probe_sum();
	t0 = MPI_Wtime();
	rc = run_loop(variant, sbuf, rbuf, bytes, iters);
	double el = MPI_Wtime() - t0;
	probe_totals b = probe_sum();
	if (rc != MPI_SUCCESS) return rc;
	double n = (double)iters;
	vals[0] = el / n * 1e6;
	vals[1] = (double)(b.main_cs - a.main_cs + b.other_cs - a.other_cs) / n;
	vals[2] = (double)(b.main_cs - a.main_cs) / n;
	vals[3] = (double)(b.other_cs - a.other_cs) / n;
	vals[4] = (double)(b.other_run_ns - a.other_run_ns) / n / 1e3;
	vals[5] = (double)(b.main_wait_ns - a.main_wait_ns) / n / 1e3;
	vals[6] = b.nthreads;
	*iters_out = iters;
	return MPI_SUCCESS;
}

int main(int argc, char **argv) {
	int sizes[MAXS] = {4, 8, 64, 512, 4096}, nsizes = 5;
	const char *vnames[3] = {"c", "c-iall", "c-spin"};
	int variants[MAXV] = {0, 1, 2}, nvar = 3;
	int reps = 3, header = 0;
	double tbudget = 0.1;
	long miniters = 1000, maxiters = 20000;
	const char *label = "";
	MPI_Init(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-header") == 0) { header = 1; continue; }
		if (!v) { fprintf(stderr, "gocall-c: %s needs a value\n", a); MPI_Abort(MPI_COMM_WORLD, 2); }
		i++;
		if (strcmp(a, "-sizes") == 0) {
			char *s = strdup(v), *tok, *save = NULL;
			nsizes = 0;
			for (tok = strtok_r(s, ",", &save); tok && nsizes < MAXS; tok = strtok_r(NULL, ",", &save)) {
				int b = atoi(tok);
				if (b < 4 || b > 8192 || b % 4) { fprintf(stderr, "gocall-c: size %s: want a multiple of 4 in [4, 8192]\n", tok); MPI_Abort(MPI_COMM_WORLD, 2); }
				sizes[nsizes++] = b;
			}
			free(s);
		} else if (strcmp(a, "-variants") == 0) {
			char *s = strdup(v), *tok, *save = NULL;
			nvar = 0;
			for (tok = strtok_r(s, ",", &save); tok && nvar < MAXV; tok = strtok_r(NULL, ",", &save)) {
				if (strcmp(tok, "c") == 0) variants[nvar++] = 0;
				else if (strcmp(tok, "c-iall") == 0) variants[nvar++] = 1;
				else if (strcmp(tok, "c-spin") == 0) variants[nvar++] = 2;
				else { fprintf(stderr, "gocall-c: unknown variant %s (c, c-iall, c-spin)\n", tok); MPI_Abort(MPI_COMM_WORLD, 2); }
			}
			free(s);
		} else if (strcmp(a, "-reps") == 0) reps = atoi(v);
		else if (strcmp(a, "-time") == 0) tbudget = atof(v);
		else if (strcmp(a, "-min-iters") == 0) miniters = atol(v);
		else if (strcmp(a, "-max-iters") == 0) maxiters = atol(v);
		else if (strcmp(a, "-label") == 0) label = v;
		else if (strcmp(a, "-spin-ns") == 0) spin_ns = atol(v);
		else { fprintf(stderr, "gocall-c: unknown flag %s\n", a); MPI_Abort(MPI_COMM_WORLD, 2); }
	}
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank == 0 && header)
		printf("prog,label,ranks,rep,variant,gosched,bytes,iters,us_max,us_mean,cs_max,cs_mean,main_cs_max,other_cs_max,other_run_us_max,main_wait_us_max,threads\n");
	for (int rep = 0; rep < reps; rep++) {
		for (int k = 0; k < nvar; k++) {
			int v = variants[(k + rep) % nvar]; // each rep starts one variant later
			for (int j = 0; j < nsizes; j++) {
				double vals[7], mx[7], sum[7];
				long iters = 0;
				int bytes = sizes[j];
				if (v == 2) { // no message: measured once, at "0 bytes"
					if (j > 0) continue;
					bytes = 0;
				}
				int rc = measure(v, bytes, tbudget, miniters, maxiters, vals, &iters);
				if (rc != MPI_SUCCESS) { fprintf(stderr, "gocall-c: MPI error %d\n", rc); MPI_Abort(MPI_COMM_WORLD, 1); }
				MPI_Reduce(vals, mx, 7, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
				MPI_Reduce(vals, sum, 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
				if (rank == 0) {
					printf("c,%s,%d,%d,%s,-,%d,%ld,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.0f\n", label, size, rep, vnames[v], bytes, iters,
					       mx[0], sum[0] / size, mx[1], sum[1] / size, mx[2], mx[3], mx[4], mx[5], mx[6]);
					fflush(stdout);
				}
			}
		}
	}
	MPI_Finalize();
	return 0;
}
