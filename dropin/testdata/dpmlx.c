// dpmlx.c: the extension entry points of libdpml.so (dpmlx.h), looked up
// with dlsym as a program that must also run without the library would.
//
//	dpmlx -o DIR
//
// Every rank writes its lines to DIR/rank-N.txt: "case NAME ok" or
// "FAIL NAME: what". Results of every allreduce are compared with values
// computed here. Without libdpml.so it writes "case nolib".

#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpmlx.h"

static FILE *out;
static int rank, size, fails;
static DPMLX_Check_plan_fn check_plan;
static DPMLX_Set_plan_fn set_plan;
static DPMLX_Last_plan_fn last_plan;
static DPMLX_Library_version_fn version;

static void expect(int ok, const char *name, const char *fmt, const char *detail) {
	if (ok) {
		fprintf(out, "case %s ok\n", name);
		return;
	}
	fails++;
	fprintf(out, "FAIL %s: ", name);
	fprintf(out, fmt, detail);
	fprintf(out, "\n");
}

// reduce sums n floats (rank r contributes r+1+i%3 at i) on comm and checks
// every element.
static int reduce(MPI_Comm comm, int n) {
	int cs;
	MPI_Comm_size(comm, &cs);
	float *s = malloc(sizeof(float) * n), *r = malloc(sizeof(float) * n);
	int me;
	MPI_Comm_rank(comm, &me);
	for (int i = 0; i < n; i++) s[i] = (float)(me + 1 + i % 3), r[i] = -1;
	MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, comm);
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (r[i] != (float)(cs * (cs + 1) / 2 + cs * (i % 3))) bad++;
	free(s), free(r);
	return bad == 0;
}

static int prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

// plan_case sets spec on comm, reduces n floats and checks that
// DPMLX_Last_plan starts with want.
static void plan_case(const char *name, MPI_Comm comm, const char *spec, int n, const char *want) {
	char buf[DPMLX_MAX_SPEC], detail[600];
	int rc = set_plan(comm, spec);
	int ok = reduce(comm, n);
	int lrc = last_plan(comm, buf, sizeof buf);
	snprintf(detail, sizeof detail, "set_plan(%s) = %d, result %s, last_plan = %d \"%s\", want prefix \"%s\"", spec, rc,
		 ok ? "ok" : "WRONG", lrc, buf, want);
	expect(rc == MPI_SUCCESS && ok && lrc == MPI_SUCCESS && prefix(buf, want), name, "%s", detail);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	out = stdout;
	if (argc == 3 && strcmp(argv[1], "-o") == 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/rank-%d.txt", argv[2], rank);
		if ((out = fopen(path, "w")) == NULL) {
			perror(path);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	check_plan = (DPMLX_Check_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Check_plan");
	set_plan = (DPMLX_Set_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Set_plan");
	last_plan = (DPMLX_Last_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Last_plan");
	version = (DPMLX_Library_version_fn)dlsym(RTLD_DEFAULT, "DPMLX_Library_version");
	if (!check_plan || !set_plan || !last_plan || !version) {
		fprintf(out, "case nolib\n");
		fclose(out);
		MPI_Finalize();
		return 0;
	}
	char buf[DPMLX_MAX_SPEC], detail[600];
	int rc;

	// Parsing, without MPI.
	rc = check_plan("Pipelined: k=4 ,l=8", buf, sizeof buf);
	expect(rc == MPI_SUCCESS && strcmp(buf, "pipelined:l=8,k=4") == 0, "check-canonical", "got \"%s\"", buf);
	rc = check_plan("dpml:k=4", buf, sizeof buf);
	expect(rc == MPI_ERR_ARG && strstr(buf, "dpml runs k=1") != NULL, "check-bad", "got \"%s\"", buf);
	rc = check_plan(NULL, buf, sizeof buf);
	expect(rc == MPI_ERR_ARG, "check-null", "%s", "no MPI_ERR_ARG");
	rc = check_plan("auto", NULL, 0);
	expect(rc == MPI_SUCCESS, "check-nobuf", "%s", "auto with no buffer failed");
	rc = check_plan("dpml:l=2,seg=64K", buf, 5);
	expect(rc == MPI_SUCCESS && strcmp(buf, "dpml") == 0, "check-truncated", "got \"%s\"", buf);
	expect(strstr(version(), "DPML-Go") != NULL, "version", "got \"%s\"", version());

	// Nothing on world yet.
	rc = last_plan(MPI_COMM_WORLD, buf, sizeof buf);
	expect(rc == MPI_ERR_OTHER && strcmp(buf, "none") == 0, "last-none", "got \"%s\"", buf);

	// Native first: these calls pass to the MPI library.
	plan_case("native", MPI_COMM_WORLD, "native", 1000, "native reason=native-plan");
	plan_case("dpml-l1", MPI_COMM_WORLD, "dpml:l=1", 1000, "dpml:l=1,k=1,intra=shm,seg=");
	rc = last_plan(MPI_COMM_WORLD, buf, sizeof buf);
	expect(strstr(buf, " segments=1") != NULL, "segments", "got \"%s\"", buf);
	plan_case("dpml-l2", MPI_COMM_WORLD, "dpml:l=2", 1000, "dpml:l=2,k=1,");
	plan_case("pipelined", MPI_COMM_WORLD, "pipelined:l=2,k=2", 100000, "pipelined:l=2,k=2,");
	// A segment size forces several segments.
	plan_case("seg", MPI_COMM_WORLD, "dpml:l=1,seg=4K", 10000, "dpml:l=1,k=1,intra=shm,seg=4K segments=10");
	plan_case("native-again", MPI_COMM_WORLD, "native", 1000, "native reason=native-plan");
	// Back to the engine's choice: some plan the engine ran.
	rc = set_plan(MPI_COMM_WORLD, "auto");
	int ok = reduce(MPI_COMM_WORLD, 1000);
	last_plan(MPI_COMM_WORLD, buf, sizeof buf);
	expect(rc == MPI_SUCCESS && ok && strcmp(buf, "none") != 0 && strstr(buf, "reason=") == NULL, "auto", "got \"%s\"", buf);

	// Calls the library passes through whatever the plan: a pair type.
	set_plan(MPI_COMM_WORLD, "dpml:l=1");
	struct { int v, i; } in = {rank, rank}, res = {-1, -1};
	MPI_Allreduce(&in, &res, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
	rc = last_plan(MPI_COMM_WORLD, buf, sizeof buf);
	snprintf(detail, sizeof detail, "result (%d,%d), last plan \"%s\"", res.v, res.i, buf);
	expect(rc == MPI_SUCCESS && res.v == size - 1 && strcmp(buf, "native reason=type") == 0, "passthrough", "%s", detail);

	// Truncation.
	reduce(MPI_COMM_WORLD, 1000);
	rc = last_plan(MPI_COMM_WORLD, buf, 5);
	expect(rc == MPI_ERR_TRUNCATE && strcmp(buf, "dpml") == 0, "last-truncated", "got \"%s\"", buf);
	expect(last_plan(MPI_COMM_WORLD, NULL, 10) == MPI_ERR_ARG, "last-null", "%s", "no MPI_ERR_ARG");

	// Bad arguments.
	expect(set_plan(MPI_COMM_WORLD, "bogus") == MPI_ERR_ARG, "set-bad-spec", "%s", "no MPI_ERR_ARG");
	expect(set_plan(MPI_COMM_WORLD, NULL) == MPI_ERR_ARG, "set-null-spec", "%s", "no MPI_ERR_ARG");
	expect(set_plan(MPI_COMM_NULL, "auto") == MPI_ERR_COMM, "set-comm-null", "%s", "no MPI_ERR_COMM");
	expect(set_plan(MPI_COMM_SELF, "dpml:l=1") == MPI_ERR_COMM, "set-self-fixed", "%s", "no MPI_ERR_COMM");
	expect(set_plan(MPI_COMM_SELF, "auto") == MPI_SUCCESS && set_plan(MPI_COMM_SELF, "native") == MPI_SUCCESS, "set-self-auto",
	       "%s", "auto or native refused on MPI_COMM_SELF");

	// A communicator kept native from its first call never builds an
	// engine (the Go test counts engines), and the plan is per
	// communicator: world's is untouched.
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	set_plan(d, "native");
	ok = reduce(d, 1000) & reduce(d, 1000) & reduce(d, 1000);
	rc = last_plan(d, buf, sizeof buf);
	expect(ok && rc == MPI_SUCCESS && strcmp(buf, "native reason=native-plan") == 0, "dup-native", "got \"%s\"", buf);
	rc = last_plan(MPI_COMM_WORLD, buf, sizeof buf);
	expect(rc == MPI_ERR_OTHER && strcmp(buf, "none") == 0, "last-other-comm", "got \"%s\"", buf);
	plan_case("world-still-fixed", MPI_COMM_WORLD, "dpml:l=1", 1000, "dpml:l=1,");
	MPI_Comm_free(&d);

	// A duplicate may run on world's engine, yet its plan is its own:
	// calls alternating between the two run each one's plan.
	MPI_Comm d2;
	MPI_Comm_dup(MPI_COMM_WORLD, &d2);
	for (int i = 0; i < 3; i++) {
		plan_case("alternate-dup", d2, "dpml:l=2", 1000, "dpml:l=2,");
		plan_case("alternate-world", MPI_COMM_WORLD, "dpml:l=1", 1000, "dpml:l=1,");
	}
	MPI_Comm_free(&d2);

	// The learner's plan, then a forced one, on a size the C layer runs
	// under a parked clearance (16 floats, after a call of another size):
	// the forced plan must run, not the parked clearance's.
	for (int i = 0; i < 3; i++) plan_case("parked-auto", MPI_COMM_WORLD, "auto", 16, "");
	plan_case("parked-other-size", MPI_COMM_WORLD, "auto", 3, "");
	plan_case("parked-forced", MPI_COMM_WORLD, "dpml:l=2", 16, "dpml:l=2,");

	fprintf(out, "done fails=%d\n", fails);
	if (out != stdout) fclose(out);
	MPI_Finalize();
	return fails ? 1 : 0;
}
