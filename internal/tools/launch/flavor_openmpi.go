//go:build !mpich

package launch

// BuildFlavor is the MPI this binary was built for: Open MPI by default,
// MPICH with the build tag mpich (as packages mpi and dropin). dpmlrun uses
// it when the program does not say (DefaultMPI); tests use it to pick the
// launcher and compilers matching the MPI they link.
const BuildFlavor = OpenMPI
