// Package plan is the shape of a DPML allreduce plan, and the arithmetic
// that cuts a message into segments, leader partitions and sub-chunks. The
// engine (package dpml) executes shapes and the cost model (package
// costmodel) prices them; both take the shape and the arithmetic from here,
// so they cannot drift apart. It imports nothing of the project.
//
// A Shape names a plan: the variant, l leaders per node, k sub-chunks per
// leader, the segment size, the intra-node transport (and the tree's
// radix), and whether a segment's inter-node step overlaps the next
// segment's intra-node phases.
// The same struct serves as a partial shape (dpml.Override: zero fields
// are the engine's to choose), a resolved one (embedded in dpml.Plan) and
// a tuner arm (costmodel.Arm).
package plan

import (
	"fmt"
	"strings"
)

// CacheLine is the cache-line size in bytes: the granularity of leader
// partitions and sub-chunks (leaders never write the same line), of the
// engine's slots and of its flag words (package shm).
const CacheLine = 64

// Variant names a family of plans.
type Variant uint8

const (
	// Auto: the engine picks the variant, l and k.
	Auto Variant = iota
	// DPML: the paper's four phases; the inter-node phase is one blocking
	// allreduce per leader and segment, and segments run one after the
	// other.
	DPML
	// Pipelined: DPML-Pipelined; the inter-node phase of each leader is k
	// non-blocking sub-chunk allreduces, and segment s's inter-node phase
	// overlaps segment s+1's intra-node phases.
	Pipelined
	// Native: the MPI library's allreduce, unchanged.
	Native
)

var variantNames = [...]string{"auto", "dpml", "pipelined", "native"}

func (v Variant) String() string {
	if int(v) < len(variantNames) {
		return variantNames[v]
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// ParseVariant parses a name Variant.String prints ("auto", "dpml",
// "pipelined", "native"), case-insensitively.
func ParseVariant(s string) (Variant, error) {
	for i, n := range variantNames {
		if strings.EqualFold(s, n) {
			return Variant(i), nil
		}
	}
	return 0, fmt.Errorf("plan: unknown variant %q (want %s)", s, strings.Join(variantNames[:], ", "))
}

// Overlaps reports whether plans of variant v overlap a segment's
// inter-node step with the next segment's intra-node phases (on several
// nodes). It is the one place that says so: resolved shapes carry the
// answer in Shape.Overlap.
func (v Variant) Overlaps() bool { return v == Pipelined }

// Intra is the intra-node transport of a plan: how data moves between the
// ranks of a node and their leaders.
type Intra uint8

const (
	// IntraAuto lets the engine choose.
	IntraAuto Intra = iota
	// IntraShm copies inputs into the node segment and results out of it.
	IntraShm
	// IntraCMA has leaders read inputs from the ranks' buffers and write
	// results into them with process_vm_readv/writev: no copies through
	// the segment. Falls back to IntraShm where the kernel forbids it.
	IntraCMA
	// IntraTree reduces through trees of cache-line flags, for small
	// messages: one tree per leader, tree j rooted at leader j and
	// reducing partition j (l at most MaxTrees).
	IntraTree
	// NumIntra is the number of Intra values (tables indexed by Intra).
	NumIntra
)

var intraNames = [NumIntra]string{"auto", "shm", "cma", "tree"}

func (i Intra) String() string {
	if i < NumIntra {
		return intraNames[i]
	}
	return fmt.Sprintf("Intra(%d)", int(i))
}

// ParseIntra parses a name Intra.String prints ("auto", "shm", "cma",
// "tree"), case-insensitively.
func ParseIntra(s string) (Intra, error) {
	for i, n := range intraNames {
		if strings.EqualFold(s, n) {
			return Intra(i), nil
		}
	}
	return 0, fmt.Errorf("plan: unknown intra-node transport %q (want %s)", s, strings.Join(intraNames[:], ", "))
}

// Offload says whether a plan's inter-node step runs on the host (the
// leader communicators' MPI allreduce) or is handed to an in-network
// reduction offload (package sharp: SHArP switches, or the MPI library's
// own offload). It is a field of the shape, not a setting, so that a
// caller can force it per call and a tuner can hold it as an arm.
type Offload uint8

const (
	// OffloadAuto lets the engine choose (its dispatch rule: small
	// messages of supported types and ops, when an offload is attached).
	OffloadAuto Offload = iota
	// OffloadHost runs the inter-node step on the host.
	OffloadHost
	// OffloadSharp hands the inter-node step to the attached offload;
	// calls it cannot take go to the host.
	OffloadSharp
	// NumOffload is the number of Offload values.
	NumOffload
)

var offloadNames = [NumOffload]string{"auto", "host", "sharp"}

func (o Offload) String() string {
	if o < NumOffload {
		return offloadNames[o]
	}
	return fmt.Sprintf("Offload(%d)", int(o))
}

// ParseOffload parses a name Offload.String prints ("auto", "host",
// "sharp"), case-insensitively.
func ParseOffload(s string) (Offload, error) {
	for i, n := range offloadNames {
		if strings.EqualFold(s, n) {
			return Offload(i), nil
		}
	}
	return 0, fmt.Errorf("plan: unknown offload %q (want %s)", s, strings.Join(offloadNames[:], ", "))
}

// Inter names the inter-node algorithm of a plan: the step among the
// leaders (one per node and partition) between the intra-node reduce and
// the intra-node broadcast. The engine runs each through one
// implementation of its registry and the cost model prices each with one
// cost function of its own, both indexed by Inter.
type Inter uint8

const (
	// InterAuto lets the engine choose (its default is InterMPI).
	InterAuto Inter = iota
	// InterMPI is the MPI library's allreduce over the leader
	// communicator (blocking, or non-blocking sub-chunks when the plan
	// overlaps).
	InterMPI
	// InterRing is a ring reduce-scatter then allgather over
	// point-to-point messages among the leaders: 2(n-1) steps of 1/n of
	// the partition each, every chunk reduced once in a fixed order.
	InterRing
	// InterSharp is the in-network reduction offload. A shape asks for it
	// with Offload = OffloadSharp, not with this field (the offload has
	// its own dispatch rule and falls back to the host algorithm named
	// by Inter); Shape.InterAlgorithm reports it.
	InterSharp
	// NumInter is the number of Inter values (tables indexed by Inter).
	NumInter
)

var interNames = [NumInter]string{"auto", "mpi", "ring", "sharp"}

func (i Inter) String() string {
	if i < NumInter {
		return interNames[i]
	}
	return fmt.Sprintf("Inter(%d)", int(i))
}

// ParseInter parses a name Inter.String prints ("auto", "mpi", "ring",
// "sharp"), case-insensitively.
func ParseInter(s string) (Inter, error) {
	for i, n := range interNames {
		if strings.EqualFold(s, n) {
			return Inter(i), nil
		}
	}
	return 0, fmt.Errorf("plan: unknown inter-node algorithm %q (want %s)", s, strings.Join(interNames[:], ", "))
}

// Shape is what a plan runs. Shapes are plain comparable values.
type Shape struct {
	Variant  Variant
	Leaders  int // l, leaders per node
	Pipeline int // k, sub-chunks per leader and segment (Pipelined)
	// SegmentBytes is the slice of the message moved through the node at
	// once (0: unspecified; the whole message, to the cost model).
	SegmentBytes int
	// Intra is the intra-node transport.
	Intra Intra
	// Radix is the reduction tree's radix inside a NUMA domain (IntraTree;
	// 0: the engine's).
	Radix int
	// Overlap: segment s's inter-node step runs beside segment s+1's
	// copy-in and reduce, and s's copy-out waits for it. Set where a shape
	// is resolved, from Variant.Overlaps; the engine and the cost model
	// read it instead of testing the variant.
	Overlap bool
	// Offload: where the inter-node step runs (OffloadAuto: the engine's
	// choice). Zero in every arm the tuner has today.
	Offload Offload
	// Inter: the host's inter-node algorithm (InterAuto: the engine's
	// choice, InterMPI; never InterSharp, which Offload asks for).
	Inter Inter
}

// InterAlgorithm is the inter-node algorithm a resolved shape runs: the
// offload's when Offload is OffloadSharp, else Inter (InterAuto counts as
// InterMPI, the engine's default).
func (s Shape) InterAlgorithm() Inter {
	switch {
	case s.Offload == OffloadSharp:
		return InterSharp
	case s.Inter == InterAuto:
		return InterMPI
	}
	return s.Inter
}

// String is "native", or "<variant> l=<l> k=<k>", followed by " seg=<bytes>"
// when SegmentBytes is set, by the transport when it is cma or tree, and
// by " r=<radix>" when Radix is set, by " offload=host|sharp" when
// Offload is set and by " inter=<algorithm>" when Inter is set.
func (s Shape) String() string {
	if s.Variant == Native {
		return "native"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s l=%d k=%d", s.Variant, s.Leaders, s.Pipeline)
	if s.SegmentBytes > 0 {
		fmt.Fprintf(&b, " seg=%d", s.SegmentBytes)
	}
	if s.Intra == IntraCMA || s.Intra == IntraTree {
		b.WriteString(" " + s.Intra.String())
	}
	if s.Radix > 0 {
		fmt.Fprintf(&b, " r=%d", s.Radix)
	}
	if s.Offload != OffloadAuto {
		b.WriteString(" offload=" + s.Offload.String())
	}
	if s.Inter != InterAuto {
		b.WriteString(" inter=" + s.Inter.String())
	}
	return b.String()
}

// CeilDiv is a/b rounded up, for a >= 0 and b > 0.
func CeilDiv(a, b int) int { return (a + b - 1) / b }

// pieceSize is the size of every piece of Split but the last.
func pieceSize(n, parts, align int) int {
	return min(CeilDiv(CeilDiv(n, max(parts, 1)), align)*align, n)
}

// Split cuts n units into at most parts pieces, each a multiple of align
// units but the last: per is the size of every piece but the last (at most
// n), and active the number of non-empty pieces, which form a prefix. When
// parts exceeds n/align some pieces are empty: small messages leave leaders
// (and sub-chunks) idle. The engine splits in elements (align = CacheLine /
// element size), the cost model in bytes (align = CacheLine).
func Split(n, parts, align int) (active, per int) {
	if n <= 0 {
		return 0, 0
	}
	per = pieceSize(n, parts, align)
	return CeilDiv(n, per), per
}

// Partition returns leader j's range [lo, hi) of a segment of n elements
// cut among l leaders as Split(n, l, align) says (empty for j >= active).
func Partition(n, l, align, j int) (lo, hi int) {
	per := pieceSize(n, l, align)
	lo = min(j*per, n)
	return lo, min(lo+per, n)
}

// Subchunk returns sub-chunk q of k of the partition [lo, hi), cut as
// Split(hi-lo, k, align) says.
func Subchunk(lo, hi, k, q, align int) (int, int) {
	a, z := Partition(hi-lo, k, align, q)
	return lo + a, lo + z
}

// minSegmentBytes is the smallest default segment.
const minSegmentBytes = 64 << 10

// DefaultSegmentBytes is the engine's default segment for ppn ranks per
// node and a last-level cache of llcBytes: both buffer sets of a node
// (2 x (ppn+1) slots) within half the cache, in whole cache lines, and at
// least 64 KiB. The slot size (DPML_SEGMENT_BYTES) caps it.
func DefaultSegmentBytes(llcBytes, ppn int) int {
	return max(minSegmentBytes, llcBytes/2/(2*(ppn+1))/CacheLine*CacheLine)
}

// InlineBytes is the largest message the reduction tree carries inside its
// flag lines (a 64-byte line less its 8-byte sequence word).
const InlineBytes = CacheLine - 8

// MaxTrees bounds l for the reduction tree: a plan with l trees over
// disjoint partitions (tree j rooted at leader j) needs l flag lines per
// local rank in the node segment, which holds MaxTrees of them.
const MaxTrees = 8

// TreeFanIn lists the fan-in of each level on the longest path of a
// contiguous radix-r tree over n ranks of one domain (leaders.BuildTree's
// shape: the first rank is the root, the rest is cut into min(r, n-1) runs
// of near-equal length, each run a subtree), root level first. Its length
// is the tree's depth. The cost model prices a tree by this path: each
// level waits for, and folds, that many children.
func TreeFanIn(n, r int) []int {
	var fans []int
	r = max(r, 1)
	for n > 1 {
		k := min(r, n-1)
		fans = append(fans, k)
		n = CeilDiv(n-1, k) // the longest run
	}
	return fans
}

// TreeDepth is len(TreeFanIn(n, r)) without the allocation.
func TreeDepth(n, r int) int {
	d := 0
	r = max(r, 1)
	for n > 1 {
		k := min(r, n-1)
		n = CeilDiv(n-1, k)
		d++
	}
	return d
}
