//go:build mpich

package launch

// BuildFlavor is the MPI this binary was built for: MPICH (build tag
// mpich); see flavor_openmpi.go.
const BuildFlavor = MPICH
