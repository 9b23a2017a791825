package mpi

import (
	"bytes"
	"fmt"
)

// hostNameBytes bounds the processor names compared by SplitByHost (Open
// MPI's and MPICH's MPI_MAX_PROCESSOR_NAME are 256 and 128).
const hostNameBytes = 256

// SplitByHost splits c into one communicator per processor name
// (MPI_Get_processor_name), ordered by key then rank. On a real cluster it
// gives the same groups as SplitShared; it avoids the library's notion of
// locality, which some builds compute from CPU sets rather than from the
// node (Open MPI 4.1 with an external PMIx), and which the emulated nodes of
// dpmlrun share.
func (c *Comm) SplitByHost(key int) (*Comm, error) {
	if err := checkComm(c, "SplitByHost"); err != nil {
		return nil, err
	}
	name, err := ProcessorName()
	if err != nil {
		return nil, err
	}
	if len(name) > hostNameBytes {
		return nil, fmt.Errorf("mpi: SplitByHost: processor name longer than %d bytes", hostNameBytes)
	}
	mine := make([]uint8, hostNameBytes)
	copy(mine, name)
	all := make([]uint8, hostNameBytes*c.Size())
	if err := Allgather(c, mine, all); err != nil {
		return nil, fmt.Errorf("mpi: SplitByHost: %w", err)
	}
	// The color is the first rank with the same name: equal on every rank
	// of a host, different between hosts.
	color := 0
	for r := 0; r < c.Size(); r++ {
		if bytes.Equal(all[r*hostNameBytes:(r+1)*hostNameBytes], mine) {
			color = r
			break
		}
	}
	return c.Split(color, key)
}
