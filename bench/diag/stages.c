/* Prints each stage of an MPI program's life, unbuffered, to find where an
   emulated multi-node job stops. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char h[64];
    int r, s, x = 1, y;
    setvbuf(stdout, NULL, _IONBF, 0);
    gethostname(h, sizeof h);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    printf("%s r%d init\n", h, r);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("%s r%d barrier\n", h, r);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("%s r%d allreduce %d\n", h, r, y);
    MPI_Finalize();
    printf("%s r%d finalized\n", h, r);
    return 0;
}
