package costmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/dpmlgo/dpml/plan"
)

// ElemClass groups element types whose reduction costs alike; it is part of
// a tuning Key and selects the model's reduction cost c.
type ElemClass uint8

const (
	ElemAny     ElemClass = iota // unknown or mixed: the model's generic c
	ElemInt                      // all integer types
	ElemFloat32                  // float32
	ElemFloat64                  // float64
	ElemComplex                  // complex64, complex128
	NumElemClasses
)

var elemNames = [...]string{"any", "int", "float32", "float64", "complex"}

func (e ElemClass) String() string {
	if int(e) < len(elemNames) {
		return elemNames[e]
	}
	return fmt.Sprintf("ElemClass(%d)", int(e))
}

// ParseElemClass parses a name printed by ElemClass.String.
func ParseElemClass(s string) (ElemClass, error) {
	for i, n := range elemNames {
		if strings.EqualFold(s, n) {
			return ElemClass(i), nil
		}
	}
	return 0, fmt.Errorf("costmodel: unknown element class %q", s)
}

// OpClass groups reduction operations; it is part of a tuning Key.
type OpClass uint8

const (
	OpAny    OpClass = iota // unknown
	OpArith                 // sum, prod
	OpMinMax                // min, max
	OpLogic                 // land, lor, lxor, band, bor, bxor
	NumOpClasses
)

var opNames = [...]string{"any", "arith", "minmax", "logic"}

func (o OpClass) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("OpClass(%d)", int(o))
}

// ParseOpClass parses a name printed by OpClass.String.
func ParseOpClass(s string) (OpClass, error) {
	for i, n := range opNames {
		if strings.EqualFold(s, n) {
			return OpClass(i), nil
		}
	}
	return 0, fmt.Errorf("costmodel: unknown op class %q", s)
}

// Layout is the shape of a communicator: h nodes and the smallest number of
// ranks on a node.
type Layout struct {
	Nodes int // h
	PPN   int // smallest ranks per node
}

func (l Layout) String() string { return fmt.Sprintf("%dx%d", l.Nodes, l.PPN) }

// ElemCosts holds the reduction cost c in seconds per byte per folded source,
// by element class. A zero entry means "use ElemAny's".
type ElemCosts [NumElemClasses]float64

// Of returns c for class e.
func (c *ElemCosts) Of(e ElemClass) float64 {
	if int(e) < len(c) && c[e] > 0 {
		return c[e]
	}
	return c[ElemAny]
}

// MarshalJSON writes the non-zero costs as an object keyed by class name.
func (c ElemCosts) MarshalJSON() ([]byte, error) {
	m := map[string]float64{}
	for i, v := range c {
		if v != 0 || i == int(ElemAny) {
			m[elemNames[i]] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object written by MarshalJSON.
func (c *ElemCosts) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = ElemCosts{}
	for k, v := range m {
		e, err := ParseElemClass(k)
		if err != nil {
			return err
		}
		c[e] = v
	}
	return nil
}

// Model is the fitted cost model (see doc.go for the equations). All times
// are in seconds, all sizes in bytes. The zero Model predicts 0 for
// everything; start from DefaultModel or Calibrate.
type Model struct {
	A  float64 `json:"a"`     // inter-node startup per message (Eq. 5's a)
	B  float64 `json:"b"`     // inter-node per byte, remote reduction included (Eq. 5's b + c)
	Ap float64 `json:"a_shm"` // a': startup per shared-memory copy (per partition)
	Bp float64 `json:"b_shm"` // b': shared-memory copy per byte, under the node's usual ppn-way concurrency
	// C is the intra-node reduction cost per byte and folded source, by
	// element class.
	C  ElemCosts `json:"c"`
	R0 float64   `json:"r0"` // reduction startup per leader and segment (fitted intercept)
	// RedPar is the intra-node reduction concurrency: l leaders folding at
	// once each run 1 + (l-1)/RedPar times slower than one alone (they
	// share the memory bandwidth; the shared-memory side of Fig. 1). 0: no
	// contention.
	RedPar float64 `json:"reduce_par"`
	S      float64 `json:"s"` // synchronisation per segment: the flag waits of one segment
	// NativeA, NativeB price the MPI library's allreduce over p ranks as
	// ceil(lg p) * (NativeA + n*NativeB). Both zero: Native is priced as
	// 1.05 x DPML with one leader.
	NativeA float64 `json:"native_a"`
	NativeB float64 `json:"native_b"`
	// Conc is the inter-node concurrency curve (Fig. 1 of the paper).
	Conc Concurrency `json:"concurrency"`
	// CMACopy scales the copy-in and copy-out phases of plans that move
	// data by cross-memory attach (0: as the copies; unmeasured so far).
	CMACopy float64 `json:"cma_copy,omitempty"`
	// The reduction tree (plan.IntraTree), priced along its longest path
	// (plan.TreeFanIn): each level costs TreeHop (a flag line handed up one
	// level: store, transfer, the parent's wake-up) plus TreeKid per child
	// (the parent polls and folds one more line), plus, above
	// plan.InlineBytes, the children's partials moved and folded (b' + c
	// per byte); the node's result costs TreeRelease (every rank sees the
	// root's flag) plus b' per byte copied out. All three zero (tables
	// written before the tree was priced): DefaultModel's are used.
	TreeHop     float64 `json:"tree_hop,omitempty"`
	TreeKid     float64 `json:"tree_kid,omitempty"`
	TreeRelease float64 `json:"tree_release,omitempty"`
	// SharpA and SharpB price an inter-node step handed to the in-network
	// offload (plan.OffloadSharp): sharp_a + bytes*sharp_b per leader's
	// partition, whatever the node count (the switch tree's depth is
	// small and fixed). Both zero: DefaultModel's.
	SharpA float64 `json:"sharp_a,omitempty"`
	SharpB float64 `json:"sharp_b,omitempty"`
}

// Offload parameters of DefaultModel: placeholders from public numbers
// (UCC at 32 nodes x 40 ranks: 8 B through SHArP 2.9 us faster than
// host-based, the intra-node part dominating), never measured here: the
// offload this project tests against is emulated.
const (
	defaultSharpA = 2e-6
	defaultSharpB = 0.5e-9
)

// sharp returns the offloaded inter-node step's time for one partition of
// n bytes.
func (m *Model) sharp(n int) float64 {
	a, b := m.SharpA, m.SharpB
	if a == 0 && b == 0 {
		a, b = defaultSharpA, defaultSharpB
	}
	return a + float64(n)*b
}

// Tree parameters of DefaultModel: provisional, from one device run (the
// C client, b2b, 1x32, radix 8: 2.1 to 2.5 us at 4 B, inline, two levels
// of 8 and 3 children), split between hops and children by the
// cache-to-cache line latency of the device's Xeon (about 0.1 to 0.2 us).
// bench/diag/small.sh sweeps the radixes that a fit needs.
const (
	defaultTreeHop     = 0.35e-6
	defaultTreeKid     = 0.08e-6
	defaultTreeRelease = 0.5e-6
)

// DefaultModel returns parameters of the right order for a one-host
// emulated cluster (Open MPI vader between fake nodes, Xeon cores): the
// intra-node ones rounded from a calibration on the device host's 1 x 32
// sweep (testdata/), the inter-node ones guessed. A placeholder until
// Calibrate runs on device measurements of the target layouts.
func DefaultModel() Model {
	m := Model{
		A:       3e-6,
		B:       0.3e-9,
		Ap:      0.1e-6,
		Bp:      0.15e-9,
		R0:      1e-6,
		RedPar:  8,
		S:       3e-6,
		NativeA: 4e-6,
		NativeB: 0.2e-9,
		Conc:    ZoneCurve(4<<10, 64<<10, 16),

		TreeHop:     defaultTreeHop,
		TreeKid:     defaultTreeKid,
		TreeRelease: defaultTreeRelease,
	}
	m.C[ElemAny] = 0.08e-9
	return m
}

// Validate reports parameters that are negative, NaN or infinite, and a
// malformed concurrency table.
func (m *Model) Validate() error {
	chk := func(name string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("costmodel: parameter %s = %g: want a finite value >= 0", name, v)
		}
		return nil
	}
	for _, p := range []struct {
		n string
		v float64
	}{{"a", m.A}, {"b", m.B}, {"a_shm", m.Ap}, {"b_shm", m.Bp}, {"r0", m.R0}, {"reduce_par", m.RedPar}, {"s", m.S}, {"native_a", m.NativeA}, {"native_b", m.NativeB},
		{"cma_copy", m.CMACopy}, {"tree_hop", m.TreeHop}, {"tree_kid", m.TreeKid}, {"tree_release", m.TreeRelease},
		{"sharp_a", m.SharpA}, {"sharp_b", m.SharpB}} {
		if err := chk(p.n, p.v); err != nil {
			return err
		}
	}
	for i, v := range m.C {
		if err := chk("c["+elemNames[i]+"]", v); err != nil {
			return err
		}
	}
	return m.Conc.Validate()
}

// Breakdown is a prediction split by phase. Copy, Comp, Comm, Bcast and Sync
// are the summed work of each phase over all segments; Total is the
// critical path, which is less than their sum when segments overlap
// (Pipelined).
type Breakdown struct {
	Copy, Comp, Comm, Bcast, Sync float64
	Total                         float64
	Segments                      int
	ActiveLeaders                 int // leaders with a non-empty partition of a full segment
}

// Predict returns the predicted seconds of plan p for an n-byte allreduce on
// layout lay, with the generic reduction cost (ElemAny).
func (m *Model) Predict(p plan.Shape, n int, lay Layout) float64 {
	return m.Breakdown(p, n, lay, ElemAny).Total
}

// Rounds is ceil(log2 p) for p >= 1 (0 for p <= 1): the rounds of a
// recursive-doubling allreduce over p participants, the factor of the
// inter-node and native terms.
func Rounds(p int) float64 {
	if p <= 1 {
		return 0
	}
	return math.Ceil(math.Log2(float64(p)))
}

// CopyTime prices a copy phase (copy-in or copy-out, Eq. 7): copies
// separate copies (the partitions; 0 means 1) moving bytes in all, under
// the node's usual concurrency: copies*a' + bytes*b'.
func (m *Model) CopyTime(copies, bytes int) float64 {
	return float64(max(copies, 1))*m.Ap + float64(bytes)*m.Bp
}

// ReduceTime prices a leader's fold (Eq. 7): sources slots of bytes bytes
// each folded into one, in segments separate steps (0 means 1), element
// class e, while leaders leaders fold at once:
// segments*r0 + (sources-1)*bytes*c[e]*Contention(leaders).
func (m *Model) ReduceTime(segments, sources, bytes, leaders int, e ElemClass) float64 {
	return float64(max(segments, 1))*m.R0 + float64(sources-1)*float64(bytes)*m.C.Of(e)*m.Contention(leaders)
}

// InterTime prices pairs concurrent inter-node allreduces of bytes bytes
// each over nodes nodes (Eq. 5 with the concurrency curve), as one of them
// is measured: Rounds(nodes) * pairs*(a + bytes*b) / M(pairs, bytes).
func (m *Model) InterTime(pairs, bytes, nodes int) float64 {
	p := float64(max(pairs, 1))
	return Rounds(nodes) * p * (m.A + float64(bytes)*m.B) / m.Conc.Multiplier(p, float64(bytes))
}

// InterCost prices one inter-node algorithm (plan.Inter): the step of a
// segment among the nodes' leaders, as the slowest leader sees it, with
// leaders leaders at once, each running k sub-chunk steps of bytes bytes
// one after the other (k > 1: a pipelined plan), over nodes nodes.
type InterCost func(m *Model, leaders, k, bytes, nodes int) float64

// interCosts is the cost side of the inter-node registry (the engine's
// implementations are indexed by the same plan.Inter): one function per
// algorithm, nothing under InterAuto (resolved before pricing).
var interCosts = [plan.NumInter]InterCost{
	plan.InterMPI:   (*Model).interMPI,
	plan.InterRing:  (*Model).interRing,
	plan.InterSharp: (*Model).interSharp,
}

// InterCostOf returns algorithm id's cost function, nil when none is
// registered (InterAuto, or an unknown id).
func InterCostOf(id plan.Inter) InterCost {
	if id < plan.NumInter {
		return interCosts[id]
	}
	return nil
}

// InterStep prices the inter-node step of algorithm id (see InterCost);
// InterAuto and unregistered ids are priced as the MPI library's.
func (m *Model) InterStep(id plan.Inter, leaders, k, bytes, nodes int) float64 {
	f := InterCostOf(id)
	if f == nil {
		f = (*Model).interMPI
	}
	return f(m, leaders, k, bytes, nodes)
}

// rounds prices an algorithm of r rounds per step, each round one
// message of bytes bytes per leader (Eq. 5): the leaders' k sub-chunk
// steps in flight together share the network as the concurrency curve
// says, and each further sub-chunk adds a startup.
func (m *Model) rounds(r float64, leaders, k, bytes int) float64 {
	pairs := float64(max(leaders, 1) * max(k, 1))
	t1 := m.A + float64(bytes)*m.B
	return r * (float64(max(k, 1)-1)*m.A + pairs*t1/m.Conc.Multiplier(pairs, float64(bytes)))
}

// interMPI prices the MPI library's allreduce: recursive doubling,
// ceil(lg nodes) rounds of the whole step.
func (m *Model) interMPI(leaders, k, bytes, nodes int) float64 {
	return m.rounds(Rounds(nodes), leaders, k, bytes)
}

// interRing prices the ring reduce-scatter and allgather: 2(nodes-1)
// rounds of one chunk, the step cut in nodes pieces of whole cache lines
// (plan.Split, the engine's cut). Its bandwidth term, 2(n-1)/n of the
// step, is below recursive doubling's lg n from 3 nodes on; its 2(n-1)
// startups are above lg n, so it wins only on large steps.
func (m *Model) interRing(leaders, k, bytes, nodes int) float64 {
	if nodes <= 1 {
		return 0
	}
	_, chunk := plan.Split(bytes, nodes, plan.CacheLine)
	return m.rounds(float64(2*(nodes-1)), leaders, k, chunk)
}

// interSharp prices the in-network offload: sharp_a + bytes*sharp_b per
// step, whatever the node count (the switch tree's depth is small and
// fixed); the leaders' groups run at once.
func (m *Model) interSharp(leaders, k, bytes, nodes int) float64 {
	return float64(max(k, 1)) * m.sharp(bytes)
}

// stage is the cost of one segment of g bytes, split in the three pipeline
// stages: a = copy-in + reduce + sync, b = inter-node, c = copy-out.
type stage struct {
	copy, comp, comm, bcast, sync float64
	leaders                       int
}

func (s stage) a() float64 { return s.copy + s.comp + s.sync }

// Contention is the slowdown of one leader's fold when l leaders fold at
// once: 1 + (l-1)/RedPar.
func (m *Model) Contention(l int) float64 {
	if m.RedPar <= 0 || l <= 1 {
		return 1
	}
	return 1 + float64(l-1)/m.RedPar
}

func (m *Model) segment(g, l, k int, lay Layout, e ElemClass, inter plan.Inter) stage {
	var st stage
	if g <= 0 {
		return st
	}
	la, part := plan.Split(g, l, plan.CacheLine)
	st.leaders = la
	st.copy = m.CopyTime(la, g)
	st.bcast = st.copy
	st.sync = m.S
	if lay.PPN > 1 {
		st.comp = m.ReduceTime(1, lay.PPN, part, la, e)
	}
	if lay.Nodes > 1 {
		ka, x := plan.Split(part, k, plan.CacheLine)
		st.comm = m.InterStep(inter, la, ka, x, lay.Nodes)
	}
	return st
}

// Breakdown prices plan p for an n-byte allreduce of element class e on
// layout lay. Leaders are clamped to [1, lay.PPN]; only Pipelined uses
// k > 1; segments overlap when p.Overlap says so and there is an
// inter-node phase (a single node has none). p.Intra == plan.IntraCMA
// prices the copies with CMACopy.
func (m *Model) Breakdown(p plan.Shape, n int, lay Layout, e ElemClass) Breakdown {
	lay.Nodes, lay.PPN = max(lay.Nodes, 1), max(lay.PPN, 1)
	if n <= 0 {
		return Breakdown{}
	}
	if p.Variant == plan.Native {
		return m.native(p, n, lay, e)
	}
	if p.Intra == plan.IntraTree {
		return m.tree(p, n, lay, e)
	}
	l := min(max(p.Leaders, 1), lay.PPN)
	k := max(p.Pipeline, 1)
	if p.Variant != plan.Pipelined {
		k = 1
	}
	segs, full, last := 1, n, n
	if p.SegmentBytes > 0 && p.SegmentBytes < n {
		segs = plan.CeilDiv(n, p.SegmentBytes)
		full = p.SegmentBytes
		last = n - (segs-1)*full
	}
	inter := p.InterAlgorithm()
	if inter == plan.InterSharp {
		k = 1 // the offload's step is never pipelined
	}
	f := m.segment(full, l, k, lay, e, inter)
	z := m.segment(last, l, k, lay, e, inter)
	if p.Intra == plan.IntraCMA {
		f.copy, f.bcast = f.copy*m.cmaFactor(), f.bcast*m.cmaFactor()
		z.copy, z.bcast = z.copy*m.cmaFactor(), z.bcast*m.cmaFactor()
	}
	var b Breakdown
	b.Segments, b.ActiveLeaders = segs, f.leaders
	nf := float64(segs - 1)
	b.Copy = nf*f.copy + z.copy
	b.Comp = nf*f.comp + z.comp
	b.Comm = nf*f.comm + z.comm
	b.Bcast = nf*f.bcast + z.bcast
	b.Sync = nf*f.sync + z.sync
	if p.Overlap && lay.Nodes > 1 && segs > 1 {
		// step 0: A(0); step i: max(A(i), B(i-1)) + C(i-1); then B(S-1) + C(S-1).
		b.Total = f.a() + float64(segs-2)*(max(f.a(), f.comm)+f.bcast) +
			max(z.a(), f.comm) + f.bcast + z.comm + z.bcast
		return b
	}
	b.Total = b.Copy + b.Comp + b.Comm + b.Bcast + b.Sync
	return b
}

// DefaultTreeRadix is the radix the model prices a tree shape with when the
// shape leaves it to the engine (Radix 0): the engine's default.
const DefaultTreeRadix = 8

// tree prices the reduction tree: one segment (the engine takes the tree
// for messages of at most one slot), the levels of its longest path, the
// release, and the root's inter-node allreduce on several nodes.
//
// With l > 1 (l trees over disjoint partitions of the message, tree j
// rooted at leader j), each tree carries a partition of m bytes (the
// partitions of plan.Split over cache lines; a message of a line or less
// has one active tree). A rank works the trees in order, so the trees
// climb one behind the other: the first tree's path, plus one root level
// (hop, fan-in and fold of m bytes) for each further active tree. The
// active roots then run their inter-node steps at once, as the
// partitioned plans' leaders do.
func (m *Model) tree(p plan.Shape, n int, lay Layout, e ElemClass) Breakdown {
	hop, kid, rel := m.TreeHop, m.TreeKid, m.TreeRelease
	if hop == 0 && kid == 0 && rel == 0 {
		hop, kid, rel = defaultTreeHop, defaultTreeKid, defaultTreeRelease
	}
	r := p.Radix
	if r <= 0 {
		r = DefaultTreeRadix
	}
	active, part := 1, n
	if p.Leaders > 1 {
		active, part = plan.Split(n, min(p.Leaders, plan.MaxTrees), plan.CacheLine)
		active, part = max(active, 1), max(part, 1)
	}
	perKid := float64(part) * m.C.Of(e) // inline: the fold only
	if n > plan.InlineBytes {
		perKid += float64(part) * m.Bp // and the partial's lines moved
	}
	b := Breakdown{Segments: 1, ActiveLeaders: active, Bcast: rel}
	if n > plan.InlineBytes {
		b.Bcast += float64(n) * m.Bp
	}
	fans := plan.TreeFanIn(lay.PPN, r)
	for _, k := range fans {
		b.Sync += hop + float64(k)*kid
		b.Comp += float64(k) * perKid
	}
	if len(fans) > 0 && active > 1 {
		b.Sync += float64(active-1) * (hop + float64(fans[0])*kid)
		b.Comp += float64(active-1) * float64(fans[0]) * perKid
	}
	if lay.Nodes > 1 {
		b.Comm = m.InterStep(p.InterAlgorithm(), active, 1, part, lay.Nodes)
	}
	b.Total = b.Copy + b.Comp + b.Comm + b.Bcast + b.Sync
	return b
}

// cmaFactor scales the copy phases of a CMA plan (CMACopy; 0 means 1: no
// knowledge yet, so the learner's measurements decide).
func (m *Model) cmaFactor() float64 {
	if m.CMACopy > 0 {
		return m.CMACopy
	}
	return 1
}

func (m *Model) native(p plan.Shape, n int, lay Layout, e ElemClass) Breakdown {
	ranks := lay.Nodes * lay.PPN
	if m.NativeA == 0 && m.NativeB == 0 {
		b := m.Breakdown(plan.Shape{Variant: plan.DPML, Leaders: 1, Pipeline: 1, SegmentBytes: p.SegmentBytes}, n, lay, e)
		return Breakdown{Comm: 1.05 * b.Total, Total: 1.05 * b.Total, Segments: 1, ActiveLeaders: 1}
	}
	t := max(Rounds(ranks), 1) * (m.NativeA + float64(n)*m.NativeB)
	return Breakdown{Comm: t, Total: t, Segments: 1, ActiveLeaders: 1}
}

// ElemClassOf returns the class of a Go element kind (for the engine:
// ElemClassOf(reflect.TypeFor[T]().Kind()), once per type).
func ElemClassOf(k reflect.Kind) ElemClass {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return ElemInt
	case reflect.Float32:
		return ElemFloat32
	case reflect.Float64:
		return ElemFloat64
	case reflect.Complex64, reflect.Complex128:
		return ElemComplex
	}
	return ElemAny
}

// OpClassOf returns the class of an MPI reduction given by the name
// mpi.Op.String prints ("sum", "max", "band", ...; an "MPI_" prefix and
// case are ignored). The engine can fill a table indexed by mpi.Op once.
func OpClassOf(name string) OpClass {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "mpi_") {
	case "sum", "prod":
		return OpArith
	case "min", "max":
		return OpMinMax
	case "land", "lor", "lxor", "band", "bor", "bxor":
		return OpLogic
	}
	return OpAny
}
