// firstcall: what a program's first MPI_Allreduce costs, and the first
// call on a new communicator (max over ranks, after a barrier).
//
//	mpicc -O2 -o firstcall bench/cold/firstcall.c
//	mpirun -np 32 [-x LD_PRELOAD=$PWD/bin/libdpml.so] ./firstcall
#include <mpi.h>
#include <stdio.h>

static double maxed(double t) {
	double m = 0;
	PMPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return m;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	double x = 1, y = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double t = MPI_Wtime();
	MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double first = maxed(MPI_Wtime() - t);
	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	for (int i = 0; i < 10; i++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double ten = maxed(MPI_Wtime() - t);
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	MPI_Barrier(d);
	t = MPI_Wtime();
	MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, d);
	double dup = maxed(MPI_Wtime() - t);
	if (rank == 0) printf("first %.3f ms  next 10 %.3f ms  first on a duplicate %.3f ms\n", first * 1e3, ten * 1e3, dup * 1e3);
	MPI_Comm_free(&d);
	MPI_Finalize();
	return 0;
}
