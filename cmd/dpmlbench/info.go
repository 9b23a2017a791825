package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/sharp"
)

// cmdInfo describes the job: per node its topology, where its ranks run,
// the leaders each policy picks, and the offload backends found (is
// libsharp_coll loadable, are there InfiniBand devices, what do the MPI
// library's own offload settings say); then what the engine made of it.
func cmdInfo(args []string) error {
	fs := newFlagSet("info", "mpirun -np N dpmlbench info [flags]")
	sysfs := fs.String("sysfs", "", "sysfs root to read the topology and RDMA devices from (default /sys)")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("info: unexpected arguments %v", fs.Args())
	}
	world, err := initMPI()
	if err != nil {
		return err
	}
	defer mpi.Finalize()
	return info(os.Stdout, world, *sysfs)
}

// info is collective over world; rank 0 writes to w.
func info(w io.Writer, world *mpi.Comm, sysfs string) error {
	node, err := dpml.SplitNode(world)
	if err != nil {
		return fmt.Errorf("node split: %w", err)
	}
	defer node.Free()

	// Where each rank of this node runs, as the engine sees it.
	me, placeErr := leaders.Local()
	enc := me.Encode()
	all := make([]int64, len(enc)*node.Size())
	if err := mpi.Allgather(node, enc[:], all); err != nil {
		return fmt.Errorf("gather placement: %w", err)
	}
	places, err := leaders.DecodePlaces(all)
	if err != nil {
		return fmt.Errorf("decode placement: %w", err)
	}

	// One text per node, written by its first rank.
	var text string
	if node.Rank() == 0 {
		text = describeNode(places, placeErr, sysfs)
	}
	texts, err := gatherText(world, text)
	if err != nil {
		return err
	}

	// What the engine makes of it (attaches the offload DPML_OFFLOAD asks for).
	d, newErr := dpml.New(world)
	var eng string
	if newErr != nil {
		eng = fmt.Sprintf("dpml.New failed: %v\n", newErr)
	} else {
		eng = fmt.Sprintf("engine: %d ranks on %d node(s), ppn %d..%d; offload: %v\n",
			d.Size(), d.Nodes(), d.MinPPN(), d.PPN(), d.Offload())
		if err := d.Close(); err != nil {
			eng += fmt.Sprintf("dpml Close: %v\n", err)
		}
	}
	if world.Rank() != 0 {
		return nil
	}
	fmt.Fprintf(w, "dpmlbench info: %d rank(s); MPI: %s\n", world.Size(), firstLine(mpi.LibraryVersion()))
	n := 0
	for _, t := range texts {
		if t != "" {
			fmt.Fprintf(w, "node %d %s", n, t)
			n++
		}
	}
	fmt.Fprintf(w, "settings: %s\n", settingsLine())
	fmt.Fprint(w, eng)
	return nil
}

// describeNode is one node's part of the report.
func describeNode(places []leaders.Place, placeErr error, sysfs string) string {
	var b strings.Builder
	host, _ := mpi.ProcessorName()
	fmt.Fprintf(&b, "(%s): %d rank(s)\n", host, len(places))
	if t, err := leaders.ReadTopology(sysfs); err != nil {
		fmt.Fprintf(&b, "  topology: %v\n", err)
	} else {
		sockets, numa := map[int]bool{}, map[int]bool{}
		for _, c := range t.CPUs {
			sockets[c.Socket], numa[c.NUMA] = true, true
		}
		fmt.Fprintf(&b, "  topology: %d CPU(s), %d socket(s), %d NUMA node(s)\n", len(t.CPUs), len(sockets), len(numa))
	}
	if placeErr != nil {
		fmt.Fprintf(&b, "  placement unknown (%v): leaders spread by local rank\n", placeErr)
	}
	for i, p := range places {
		fmt.Fprintf(&b, "  local rank %d: %v\n", i, p)
	}
	order := leaders.Order(places)
	fmt.Fprintf(&b, "  leaders: order %v; node level (one per node): local rank %d; socket level (one per socket): %v\n",
		order, leaders.NodeLeader(places), leaders.SocketLeaders(places))

	lib, _ := config.Get(config.SharpLib)
	p := sharp.Detect(lib, sysfs)
	switch {
	case p.Loaded && p.Emulated:
		fmt.Fprintf(&b, "  libsharp_coll: %s loads: the EMULATED switch of the tests (internal/testkit/fakesharp), not SHArP\n", p.Library)
	case p.Loaded:
		fmt.Fprintf(&b, "  libsharp_coll: %s loads (entry points found)\n", p.Library)
	default:
		fmt.Fprintf(&b, "  libsharp_coll: not available (%v)\n", p.LoadErr)
	}
	if len(p.Devices) == 0 {
		fmt.Fprintf(&b, "  InfiniBand devices: none (class infiniband of sysfs)\n")
	}
	for _, d := range p.Devices {
		var ports []string
		for _, pt := range d.Ports {
			ports = append(ports, fmt.Sprintf("port %d %s %s", pt.Num, pt.LinkLayer, pt.State))
		}
		fmt.Fprintf(&b, "  RDMA device %s (NUMA %d, usable for SHArP %v): %s\n", d.Name, d.NUMA, d.Usable(), strings.Join(ports, "; "))
	}
	if len(p.Env) == 0 {
		fmt.Fprintf(&b, "  MPI library offload settings: none in the environment (HCOLL_*, UCC_*, OMPI_MCA_coll_*, SHARP_COLL_*, MV2_*)\n")
	} else {
		fmt.Fprintf(&b, "  MPI library offload settings: %s\n", strings.Join(p.Env, " "))
		for _, s := range sharp.MPIOffloads(p.Env) {
			fmt.Fprintf(&b, "    %s: DPML_OFFLOAD=mpi gives it one-process-per-node leader communicators\n", s)
		}
	}
	return b.String()
}

// settingsLine lists the offload settings in effect.
func settingsLine() string {
	var s []string
	for _, name := range []string{config.Offload, config.OffloadBytes, config.OffloadLead, config.SharpLib, config.TreeBytes} {
		v, _ := config.Get(name)
		s = append(s, name+"="+v)
	}
	return strings.Join(s, " ")
}

// gatherText gives every rank every rank's text (collective).
func gatherText(c *mpi.Comm, text string) ([]string, error) {
	n := []int64{int64(len(text))}
	lens := make([]int64, c.Size())
	if err := mpi.Allgather(c, n, lens); err != nil {
		return nil, fmt.Errorf("gather text lengths: %w", err)
	}
	width := int64(1)
	for _, l := range lens {
		width = max(width, l)
	}
	mine := make([]uint8, width)
	copy(mine, text)
	all := make([]uint8, int(width)*c.Size())
	if err := mpi.Allgather(c, mine, all); err != nil {
		return nil, fmt.Errorf("gather texts: %w", err)
	}
	out := make([]string, c.Size())
	for r := range out {
		b := all[int64(r)*width : int64(r)*width+lens[r]]
		out[r] = string(bytes.Clone(b))
	}
	return out, nil
}
