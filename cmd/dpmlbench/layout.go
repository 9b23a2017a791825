package main

import (
	"bytes"
	"fmt"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/mpi"
)

// layout is where the ranks run: node names, node communicator, ppn.
type layout struct {
	node      *mpi.Comm // ranks sharing this rank's node (MPI_COMM_TYPE_SHARED)
	nodeRank  int
	nodeSize  int
	nodes     int
	ppnMin    int
	ppnMax    int
	rankHosts []string // processor name of every world rank
}

const hostNameLen = 256

// gatherLayout is collective over world.
func gatherLayout(world *mpi.Comm) (layout, error) {
	var lay layout
	name, err := mpi.ProcessorName()
	if err != nil {
		return lay, fmt.Errorf("processor name: %w", err)
	}
	mine := make([]uint8, hostNameLen)
	copy(mine, name)
	all := make([]uint8, hostNameLen*world.Size())
	if err := mpi.Allgather(world, mine, all); err != nil {
		return lay, fmt.Errorf("gathering host names: %w", err)
	}
	for r := 0; r < world.Size(); r++ {
		b := all[r*hostNameLen : (r+1)*hostNameLen]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		lay.rankHosts = append(lay.rankHosts, string(b))
	}
	node, err := dpml.SplitNode(world)
	if err != nil {
		return lay, fmt.Errorf("node communicator: %w", err)
	}
	lay.node, lay.nodeRank, lay.nodeSize = node, node.Rank(), node.Size()
	first := int64(0)
	if lay.nodeRank == 0 {
		first = 1
	}
	// max of (ppn, -ppn) gives the largest ppn and minus the smallest.
	mm := make([]int64, 2)
	if err := mpi.Allreduce(world, []int64{int64(lay.nodeSize), -int64(lay.nodeSize)}, mm, mpi.OpMax); err != nil {
		return lay, fmt.Errorf("ppn: %w", err)
	}
	cnt := make([]int64, 1)
	if err := mpi.Allreduce(world, []int64{first}, cnt, mpi.OpSum); err != nil {
		return lay, fmt.Errorf("node count: %w", err)
	}
	lay.ppnMax, lay.ppnMin, lay.nodes = int(mm[0]), int(-mm[1]), int(cnt[0])
	return lay, nil
}

// bcastInt broadcasts rank root's v.
func bcastInt(c *mpi.Comm, v, root int) (int, error) {
	b := []int64{int64(v)}
	if err := mpi.Bcast(c, b, root); err != nil {
		return 0, fmt.Errorf("broadcast: %w", err)
	}
	return int(b[0]), nil
}

// allreduceInt64 reduces one int64 over c.
func allreduceInt64(c *mpi.Comm, v int64, op mpi.Op) (int64, error) {
	out := make([]int64, 1)
	if err := mpi.Allreduce(c, []int64{v}, out, op); err != nil {
		return 0, fmt.Errorf("allreduce %v: %w", op, err)
	}
	return out[0], nil
}
