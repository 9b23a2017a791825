package dpml

import (
	"fmt"

	"github.com/dpmlgo/dpml/plan"
)

// maxRadix bounds a tree's radix (a parent folds at most this many children
// of its domain at once).
const maxRadix = 64

// Static phase lists: plans share them instead of allocating.
var (
	phasesNative    = []Phase{PhaseNative}
	phasesNode      = []Phase{PhaseCopyIn, PhaseReduce, PhaseCopyOut}
	phasesMultiNode = []Phase{PhaseCopyIn, PhaseReduce, PhaseInter, PhaseCopyOut}
)

// or fills the zero fields of o from d.
func (o Override) or(d Override) Override {
	if o.Variant == Auto {
		o.Variant = d.Variant
	}
	if o.Leaders == 0 {
		o.Leaders = d.Leaders
	}
	if o.Pipeline == 0 {
		o.Pipeline = d.Pipeline
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = d.SegmentBytes
	}
	if o.Intra == IntraAuto {
		o.Intra = d.Intra
	}
	if o.Radix == 0 {
		o.Radix = d.Radix
	}
	if o.Offload == plan.OffloadAuto {
		o.Offload = d.Offload
	}
	if o.Inter == plan.InterAuto {
		o.Inter = d.Inter
	}
	return o
}

// prepared is a plan with what the executor derives from it for this rank
// on every call, done once per plan instead: the partition arithmetic (a
// few integer divisions per segment), and which of the executor's three
// ways runs it (the native plan, the fused tree call, or the segments'
// steps through the transports).
type prepared struct {
	p          Plan
	full, last segPart // a segment of SegElems elements, and the last segment
	fused      bool    // the fused tree call's shape (fusedShape)
}

// segPart is what the size of a segment fixes for this rank: the segment's
// length, this rank's partition [plo, phi) of it, and how many leaders hold
// a non-empty partition.
type segPart struct{ n, plo, phi, active int }

func (c *Comm) prepare(p Plan) prepared {
	pp := prepared{p: p, fused: c.fusedShape(&p)}
	if p.Segments == 0 {
		return pp
	}
	part := func(s int) segPart {
		lo, hi := p.segment(s)
		plo, phi := p.partition(hi-lo, c.pos)
		return segPart{n: hi - lo, plo: plo, phi: phi, active: p.activeLeaders(hi - lo)}
	}
	pp.full, pp.last = part(0), part(p.Segments-1)
	return pp
}

// part returns segment s's segPart.
func (pp *prepared) part(s int) *segPart {
	if s == pp.p.Segments-1 {
		return &pp.last
	}
	return &pp.full
}

// planMemo is one prepared plan and the arguments it was made for.
type planMemo struct {
	valid     bool
	count, es int
	o         Override
	pp        prepared
}

// planFor is plan with a one-entry memo, prepared. A plan depends only on
// its arguments and on what is fixed when the communicator is made, except
// the per-communicator override (SetOverride invalidates the memo);
// back-to-back calls of one size, where the few hundred nanoseconds of
// planning show (perf, the tree at 8 B), plan once. The result points into
// the memo: it stays valid until the next call on c (LastPlan reads it).
func (c *Comm) planFor(count, es int, o Override) (*prepared, error) {
	m := &c.memo
	if m.valid && m.count == count && m.es == es && m.o == o {
		return &m.pp, nil
	}
	p, err := c.plan(count, es, o)
	if err != nil {
		return nil, err
	}
	*m = planMemo{valid: true, count: count, es: es, o: o, pp: c.prepare(p)}
	return &m.pp, nil
}

// plan resolves an override into a complete plan. Precedence: the per-call
// override, then the communicator's (SetOverride), then DPML_LEADERS /
// DPML_PIPELINE, then the default policy.
// Preconditions that the multi-leader plans need (more than one rank on a
// node) fall back to the native plan, as in coll/han.
func (c *Comm) plan(count, es int, o Override) (Plan, error) {
	if count < 0 || es <= 0 {
		return Plan{}, fmt.Errorf("dpml: plan for %d elements of %d bytes", count, es)
	}
	p := Plan{Count: count, ElemSize: es, Nodes: c.nodes, PPN: c.minPPN, Align: max(1, alignBytes/es)}
	o = o.or(c.fixed).or(c.env)
	var err error
	v := o.Variant
	if c.nodes == c.size && !c.offloadsAlone(count*es, o) {
		v = Native // one rank per node everywhere: DPML degenerates (unless the switches reduce)
	}
	if c.size == 1 || v == Native {
		p.Variant, p.Phases, p.Leaders, p.Pipeline = Native, phasesNative, 1, 1
		return p, nil
	}
	def, defSeg := c.defaultPlan(count * es)
	intra := o.Intra
	if intra == IntraAuto {
		intra = def.Intra
		if intra == IntraTree && o.Leaders > 0 {
			intra = IntraShm // a forced leader count asks for the partitioned plans
		}
	}
	switch {
	case intra == IntraCMA && !c.cma: // precondition: falls back to copies
		intra = IntraShm
	case intra == IntraTree && count*es > c.segBudget: // one slot at most
		intra = IntraShm
	}
	if v == Auto {
		v = def.Variant
		if o.Pipeline > 1 {
			v = Pipelined
		}
	}
	l, k := o.Leaders, o.Pipeline
	if l <= 0 {
		l = def.Leaders
	}
	if k <= 0 {
		k = def.Pipeline
	}
	if intra == IntraTree {
		// One tree rooted at leader 0, unless l is forced: then l trees
		// over disjoint partitions (tree.go).
		l = min(max(o.Leaders, 1), plan.MaxTrees, c.minPPN)
		if p.Radix = o.Radix; p.Radix <= 0 {
			p.Radix = c.treeRadix
		}
		p.Radix = min(p.Radix, maxRadix)
		p.Depth = 0
		for j := range l {
			p.Depth = max(p.Depth, c.treeFor(p.Radix, j).depth)
		}
	}
	if v == DPML {
		k = 1
	}
	p.Variant, p.Leaders, p.Pipeline, p.Intra = v, min(max(l, 1), c.minPPN), max(k, 1), intra
	p.Phases = phasesMultiNode
	if c.nodes == 1 {
		p.Phases = phasesNode
	}
	p.Overlap = p.Variant.Overlaps() && c.nodes > 1
	p.Stream = p.Intra != IntraCMA && c.streamBytes > 0 && count*es*p.PPN >= c.streamBytes
	segBytes := c.segBudget
	if o.SegmentBytes > 0 {
		segBytes = min(segBytes, max(o.SegmentBytes, alignBytes))
	} else if p.Intra == IntraShm {
		// With CMA the segment only bounds the leaders' result area: the
		// largest one means the fewest system calls. The tree moves its
		// message (at most a slot) in one segment.
		segBytes = min(segBytes, defSeg)
	}
	p.SegElems = max(p.Align, segBytes/es/p.Align*p.Align)
	if count > 0 {
		p.Segments = ceilDiv(count, p.SegElems)
	}
	if p.Segments <= 1 {
		p.SegElems = max(count, 1)
	}
	p.SegmentBytes = p.SegElems * es
	if p.Inter, err = interOf(o.Inter, c.nodes); err != nil {
		return Plan{}, err
	}
	p.Offload = c.offloadFor(&p, o.Offload)
	return p, nil
}

// interOf resolves a plan's host inter-node algorithm: none on one node,
// the MPI library's unless one is asked for. The in-network offload is not
// named here (Override.Offload asks for it; offloadFor decides).
func interOf(want plan.Inter, nodes int) (plan.Inter, error) {
	switch {
	case want == plan.InterSharp || want >= plan.NumInter || want != plan.InterAuto && interAlgos[want] == nil:
		return 0, fmt.Errorf("%w: inter-node algorithm %v: want %v or %v (the offload is Offload's)", ErrConfig, want, plan.InterMPI, plan.InterRing)
	case nodes < 2:
		return plan.InterAuto, nil
	case want == plan.InterAuto:
		return plan.InterMPI, nil
	}
	return want, nil
}

// defaultPlan is the built-in policy used until the tuner chooses: the
// reduction tree up to DPML_TREE_BYTES, then about 4 KiB per leader, all leaders for large messages, pipelining once the
// per-leader share passes 256 KiB. It returns the plan's shape and the
// segment size in bytes: both buffer sets of a node (2 x (ppn+1) slots)
// within half the last-level cache, at least 64 KiB (the slot size,
// DPML_SEGMENT_BYTES, caps it). On the 32-core device (300 MiB L3) 1 MiB
// slots beat the earlier 16 MiB-per-node rule's 248 KiB by 1.2x to 1.4x
// from 1 MiB to 64 MiB, and 4 MiB slots were slower again.
func (c *Comm) defaultPlan(bytes int) (plan.Shape, int) {
	l := 1
	for l*2 <= c.minPPN && bytes/(l*2) >= 4<<10 {
		l *= 2
	}
	if bytes >= 64<<10*c.minPPN {
		l = c.minPPN
	}
	// Cross-memory attach saves two copies but pays system calls and
	// page pinning per transfer. On the 32-core device it lost to the
	// copies at every size on one node of 32 ranks (about 140 us below
	// 16 KiB, 1.3x at 64 MiB) but won from 1 to 4 MiB on 4 fake nodes of
	// 8, where the tuner chose it. The tuner has both paths as arms; this
	// static policy keeps the copies.
	p := plan.Shape{Variant: DPML, Leaders: l, Pipeline: 1, Intra: IntraShm}
	if bytes <= c.treeBytes {
		p.Intra = IntraTree
	}
	if c.nodes > 1 && bytes/l >= 256<<10 {
		p.Variant, p.Pipeline = Pipelined, 2
	}
	return p, plan.DefaultSegmentBytes(c.llcBytes, c.minPPN)
}
