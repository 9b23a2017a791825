package backend

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dpmlgo/dpml/apps/internal/report"
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/mpi"
)

// Layout is where the ranks run.
type Layout struct {
	Nodes, PPN, PPNMin int
	Hosts              []string // distinct processor names, in rank order
	// PPNs is the number of ranks of every node, in order of first rank.
	PPNs []int
}

// String is "NxP" for an even layout, else the list of ppn ("3,2").
func (l Layout) String() string {
	if l.PPN == l.PPNMin {
		return fmt.Sprintf("%dx%d", l.Nodes, l.PPN)
	}
	s := make([]string, len(l.PPNs))
	for i, p := range l.PPNs {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

const hostLen = 128

// GatherLayout finds the nodes (MPI_COMM_TYPE_SHARED groups) and their
// names. Collective over world.
func GatherLayout(world *mpi.Comm) (Layout, error) {
	var lay Layout
	node, err := dpml.SplitNode(world)
	if err != nil {
		return lay, fmt.Errorf("node communicator: %w", err)
	}
	defer node.Free()
	// Every rank learns the node index of every rank: the world rank of
	// its node's first rank.
	head := []int64{int64(world.Rank())}
	if err := mpi.Bcast(node, head, 0); err != nil {
		return lay, err
	}
	heads := make([]int64, world.Size())
	if err := mpi.Allgather(world, head, heads); err != nil {
		return lay, err
	}
	name, _ := mpi.ProcessorName()
	mine := make([]uint8, hostLen)
	copy(mine, name)
	all := make([]uint8, hostLen*world.Size())
	if err := mpi.Allgather(world, mine, all); err != nil {
		return lay, err
	}
	idx := map[int64]int{}
	for r, h := range heads {
		i, ok := idx[h]
		if !ok {
			i = len(lay.PPNs)
			idx[h] = i
			lay.PPNs = append(lay.PPNs, 0)
			b := all[r*hostLen : (r+1)*hostLen]
			if j := bytes.IndexByte(b, 0); j >= 0 {
				b = b[:j]
			}
			lay.Hosts = append(lay.Hosts, string(b))
		}
		lay.PPNs[i]++
	}
	lay.Nodes = len(lay.PPNs)
	lay.PPN, lay.PPNMin = lay.PPNs[0], lay.PPNs[0]
	for _, p := range lay.PPNs {
		lay.PPN, lay.PPNMin = max(lay.PPN, p), min(lay.PPNMin, p)
	}
	return lay, nil
}

// Phase is one of an app's own timers on this rank.
type Phase struct {
	Name string
	Sec  float64
}

// Fill completes the common fields of res: backend, layout, the total
// time (slowest rank), the allreduce statistics over ranks, the plans for
// the given message sizes (elements of elemSize bytes) and the app's
// phase timers (mean over ranks). Collective over the world communicator;
// the reductions it makes are not counted. totalSec is this rank's timed
// region.
func (r *Reducer) Fill(res *report.Result, lay Layout, totalSec float64, phases []Phase, planCounts []int, elemSize int) error {
	w := r.world
	n := float64(w.Size())
	res.Backend = r.spec.String()
	res.Procs = w.Size()
	res.Nodes, res.PPN, res.PPNMin, res.Layout = lay.Nodes, lay.PPN, lay.PPNMin, lay.String()

	st := r.Stats()
	tot := r.Total()
	// One vector: total, allreduce total, per-stat seconds, phases.
	v := []float64{totalSec, tot.Seconds}
	for _, s := range st {
		v = append(v, s.Seconds)
	}
	for _, p := range phases {
		v = append(v, p.Sec)
	}
	sum := make([]float64, len(v))
	mx := make([]float64, len(v))
	mn := make([]float64, len(v))
	if err := mpi.Allreduce(w, v, sum, mpi.OpSum); err != nil {
		return err
	}
	if err := mpi.Allreduce(w, v, mx, mpi.OpMax); err != nil {
		return err
	}
	if err := mpi.Allreduce(w, v, mn, mpi.OpMin); err != nil {
		return err
	}
	res.TotalSec = mx[0]
	res.AllreduceSec, res.AllreduceMinSec, res.AllreduceMaxSec = sum[1]/n, mn[1], mx[1]
	if sum[0] > 0 {
		res.AllreduceShare = sum[1] / sum[0]
	}
	res.Allreduce = nil
	for i, s := range st {
		cs := report.CallStat{Name: s.Name, Calls: s.Calls, MaxCount: s.MaxCount, Bytes: s.Bytes,
			MeanSec: sum[2+i] / n, MaxSec: mx[2+i]}
		if s.Elems > 0 {
			cs.ElemSize = int(s.Bytes / s.Elems)
		}
		if s.Calls > 0 {
			cs.PerCall = 1e6 * cs.MeanSec / float64(s.Calls)
		}
		res.Allreduce = append(res.Allreduce, cs)
	}
	if len(phases) > 0 {
		res.Phases = map[string]float64{}
		for i, p := range phases {
			res.Phases[p.Name] = sum[2+len(st)+i] / n
		}
	}
	res.Plans = nil
	for _, c := range planCounts {
		pi := r.Plan(c, elemSize)
		res.Plans = append(res.Plans, pi)
	}
	res.Meta = meta(lay)
	if r.d != nil {
		res.Meta.MaxLeaders = r.d.MaxLeaders()
	}
	return nil
}

// meta describes the run (this rank's view: call on rank 0's result).
func meta(lay Layout) report.Meta {
	m := report.Meta{
		Date:       time.Now().UTC().Format(time.RFC3339),
		Hosts:      lay.Hosts,
		GoVersion:  runtime.Version(),
		GoSched:    gosched.Sched().String(),
		MPILibrary: firstLine(mpi.LibraryVersion()),
		Command:    os.Args,
		ElapsedSec: time.Since(start).Seconds(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				m.GitCommit = s.Value
			}
		}
	}
	if m.GitCommit == "" {
		// Built with -buildvcs=false (the Makefile): ask git, if any.
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			m.GitCommit = strings.TrimSpace(string(out))
		}
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DPML_") || strings.HasPrefix(k, "OMPI_MCA_") || k == "GOEXPERIMENT" {
			if m.Env == nil {
				m.Env = map[string]string{}
			}
			m.Env[k] = v
		}
	}
	return m
}

var start = time.Now()

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
