package dpml

import (
	"fmt"
	"strings"

	"github.com/dpmlgo/dpml/plan"
)

// Phase is one step of an allreduce plan.
type Phase uint8

const (
	// PhaseCopyIn: every rank copies its input slice into its slot of the
	// node segment (the paper's Phase 1).
	PhaseCopyIn Phase = iota
	// PhaseReduce: leader j folds partition j of every slot, in local-rank
	// order, into the result area (Phase 2).
	PhaseReduce
	// PhaseInter: leader j allreduces its partition with leader j of every
	// other node over leader communicator j (Phase 3), by the plan's
	// inter-node algorithm (Plan.Inter, Plan.Offload); with Pipeline k > 1
	// as k sub-chunk steps started at once.
	PhaseInter
	// PhaseCopyOut: every rank copies the reduced result out (Phase 4).
	PhaseCopyOut
	// PhaseNative: the MPI library's own allreduce over the whole
	// communicator (the degenerate ppn = 1 form, and the fallback).
	PhaseNative
)

var phaseNames = [...]string{"copy-in", "reduce", "inter-node", "copy-out", "native"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Variant names a family of plans; Auto lets the engine choose. It is
// plan.Variant, the type of the tuner's arms too.
type Variant = plan.Variant

const (
	// Auto: the engine picks the variant, l and k.
	Auto = plan.Auto
	// DPML: the paper's four phases; the inter-node phase is one blocking
	// allreduce per leader and segment.
	DPML = plan.DPML
	// Pipelined: DPML-Pipelined; the inter-node phase of each leader is k
	// non-blocking sub-chunk allreduces, and segment s's inter-node phase
	// overlaps segment s+1's intra-node phases.
	Pipelined = plan.Pipelined
	// Native: the MPI library's allreduce, unchanged.
	Native = plan.Native
)

// ParseVariant parses "auto", "dpml", "pipelined" or "native".
func ParseVariant(s string) (Variant, error) {
	v, err := plan.ParseVariant(s)
	if err != nil {
		return 0, fmt.Errorf("dpml: unknown variant %q (want auto, dpml, pipelined or native)", s)
	}
	return v, nil
}

// Override forces parts of a plan: a plan.Shape whose zero fields are
// chosen by the engine. The same Override must be passed on every rank of
// the communicator.
//
//	Variant       Auto: the engine's choice
//	Leaders       l, leaders per node; clamped to [1, smallest ppn]
//	Pipeline      k, sub-chunks per leader and segment
//	SegmentBytes  caps the slice of the message moved through shared
//	              memory at once; clamped to the communicator's segment budget
//	Intra         how data moves inside a node (IntraAuto: the engine's choice)
//	Radix         the reduction tree's radix inside a NUMA domain (IntraTree)
//	Overlap       ignored: the resolved variant decides it
//
// It is a type of its own over plan.Shape's fields (convert freely), so
// that dpml can give it methods.
type Override plan.Shape

// Intra is the intra-node data path of a plan (plan.Intra).
type Intra = plan.Intra

const (
	// IntraAuto lets the engine choose.
	IntraAuto = plan.IntraAuto
	// IntraShm copies inputs into the node segment and results out of it.
	IntraShm = plan.IntraShm
	// IntraCMA has leaders read inputs from the ranks' buffers and write
	// results into them with process_vm_readv/writev: no copies through
	// the segment. Falls back to IntraShm where the kernel forbids it.
	IntraCMA = plan.IntraCMA
	// IntraTree reduces through trees of cache-line flags, for small
	// messages: one tree rooted at leader 0, or with a forced l, l trees
	// over disjoint partitions (at most plan.MaxTrees); messages larger
	// than a slot fall back to IntraShm.
	IntraTree = plan.IntraTree
	numIntra  = plan.NumIntra
)

// ParseIntra parses "auto", "shm", "cma" or "tree".
func ParseIntra(s string) (Intra, error) {
	in, err := plan.ParseIntra(s)
	if err != nil {
		return 0, fmt.Errorf("dpml: unknown intra-node transport %q (want auto, shm, cma or tree)", s)
	}
	return in, nil
}

// alignBytes is the partition and slot alignment: one cache line.
const alignBytes = plan.CacheLine

// Plan is the data an allreduce executes: which phases run, with how many
// leaders, over which partitions and segments. Plans are equal on all ranks
// of a communicator.
//
// Its Shape is resolved: Leaders is l clamped to the smallest ppn (fewer
// are active when the message is small), Pipeline is 1 for DPML,
// SegmentBytes is SegElems x ElemSize, Intra is the transport that runs
// (never IntraAuto, but for Native), Radix the tree's radix (IntraTree),
// Overlap is set when segments overlap (Pipelined on several nodes), and
// Inter is the host's inter-node algorithm on several nodes (InterMPI
// unless one was asked for; InterAuto on one node, where there is no
// inter-node step; InterAlgorithm says what runs, the offload included).
type Plan struct {
	plan.Shape
	Phases   []Phase
	Count    int // elements
	ElemSize int // bytes per element
	Nodes    int // h
	PPN      int // smallest ranks-per-node of the communicator
	Depth    int // hops from the deepest rank to its tree's root on this node (IntraTree; the deepest of the l trees)
	// Stream: copy-out writes the receive buffer with non-temporal
	// stores (a result too large for the last-level cache).
	Stream bool

	SegElems int // elements per segment (the last may be shorter)
	Segments int
	// Align is the partition granularity in elements: partitions start on
	// cache-line boundaries so leaders never write the same line.
	Align int
}

// Has reports whether the plan runs phase ph.
func (p *Plan) Has(ph Phase) bool {
	for _, q := range p.Phases {
		if q == ph {
			return true
		}
	}
	return false
}

// segment returns the element range [lo, hi) of segment s.
func (p *Plan) segment(s int) (lo, hi int) {
	lo = s * p.SegElems
	return lo, min(lo+p.SegElems, p.Count)
}

// partition returns leader j's element range [lo, hi) inside a segment of n
// elements. Partitions are multiples of Align, so trailing leaders may get
// an empty range when n is small.
func (p *Plan) partition(n, j int) (lo, hi int) {
	return plan.Partition(n, p.Leaders, p.Align, j)
}

// activeLeaders is the number of leaders with a non-empty partition of a
// segment of n elements.
func (p *Plan) activeLeaders(n int) int {
	active, _ := plan.Split(n, p.Leaders, p.Align)
	return active
}

// subchunk returns sub-chunk q of k of a partition [lo, hi).
func subchunk(lo, hi, k, q, align int) (int, int) { return plan.Subchunk(lo, hi, k, q, align) }

func ceilDiv(a, b int) int { return plan.CeilDiv(a, b) }

// String draws the plan: a summary line, then the per-segment schedule as a
// table in the style of Open MPI coll/han's pipeline comment. With a
// pipelined inter-node phase, segment s's inter-node step runs beside
// segment s+1's copy-in and reduce. A value receiver, so that printing a
// Plan value (fmt.Println(c.LastPlan())) draws it too.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s: %d x %dB on %d node(s) x ppn %d; phases %v\n",
		p.Variant, p.Count, p.ElemSize, p.Nodes, p.PPN, p.Phases)
	if p.Has(PhaseNative) || p.Count == 0 {
		return b.String()
	}
	intra := "shared-memory copies"
	switch {
	case p.Intra == IntraCMA:
		intra = "cross-memory attach"
	case p.Intra == IntraTree && p.Leaders > 1:
		intra = fmt.Sprintf("%d radix-%d reduction trees of depth %d over disjoint partitions, tree j rooted at leader j", p.Leaders, p.Radix, p.Depth)
	case p.Intra == IntraTree:
		intra = fmt.Sprintf("a radix-%d reduction tree of depth %d", p.Radix, p.Depth)
		if p.inline() {
			intra += ", data inline in the flag lines"
		}
	}
	if p.Stream {
		intra += ", streaming copy-out"
	}
	switch p.InterAlgorithm() {
	case plan.InterSharp:
		intra += "; inter-node step by the in-network offload"
	case plan.InterRing:
		intra += "; inter-node step by the leaders' ring (reduce-scatter, allgather)"
	}
	fmt.Fprintf(&b, "leaders l=%d, pipeline k=%d, %d segment(s) of %d elements (%s), intra-node by %s\n",
		p.Leaders, p.Pipeline, p.Segments, p.SegElems, human(p.SegElems*p.ElemSize), intra)
	cols := []Phase{PhaseCopyIn, PhaseReduce, PhaseInter, PhaseCopyOut}
	fmt.Fprintf(&b, "%6s", "step")
	for _, c := range cols {
		fmt.Fprintf(&b, " | %-11s", c)
	}
	b.WriteString("\n")
	lag := 0
	if p.Overlap {
		lag = 1 // copy-out of segment s waits for s's inter-node step, done during s+1
	}
	steps := p.Segments + lag
	const maxRows = 6
	for t := 0; t < steps; t++ {
		if steps > maxRows && t == maxRows-2 {
			fmt.Fprintf(&b, "%6s |\n", "...")
			t = steps - 2
		}
		fmt.Fprintf(&b, "%6d", t)
		for _, c := range cols {
			s := t
			if c == PhaseCopyOut || (c == PhaseInter && lag == 1) {
				s = t - lag
			}
			cell := ""
			switch {
			case !p.Has(c):
				cell = "-"
			case s >= 0 && s < p.Segments:
				cell = fmt.Sprintf("seg %d", s)
				if c == PhaseInter && p.Pipeline > 1 {
					cell += fmt.Sprintf(" x%d", p.Pipeline)
				}
			}
			fmt.Fprintf(&b, " | %-11s", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func human(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
