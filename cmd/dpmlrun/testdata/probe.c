/* probe: prints what the emulated cluster looks like from one rank. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, shared;
    char host[256];
    MPI_Comm node;
    cpu_set_t set;
    char cpus[512] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &shared);
    gethostname(host, sizeof host);
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0, n = 0; c < CPU_SETSIZE && n < 500; c++)
        if (CPU_ISSET(c, &set)) n += snprintf(cpus + n, sizeof cpus - n, "%s%d", n ? "," : "", c);
    printf("rank=%d size=%d host=%s shared=%d cpu=%d allowed=%s nodes=%s ppn=%s job=%s\n", rank, size, host,
           shared, sched_getcpu(), cpus, getenv("DPML_RUN_NODES"), getenv("DPML_RUN_PPN"), getenv("DPML_JOB"));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
