package costmodel

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dpmlgo/dpml/plan"
)

// Key names a class of calls that share one tuning state: element class,
// op class, size bucket and layout shape. Two calls with equal keys get the
// same plan.
type Key struct {
	Elem     ElemClass
	Op       OpClass
	SizeLog2 uint8  // floor(log2 bytes): the bucket [2^SizeLog2, 2^(SizeLog2+1)); 0 also holds 0 bytes
	Nodes    uint16 // h
	PPN      uint16 // smallest ranks per node
}

// MakeKey returns the key of an allreduce of `bytes` bytes (O(1), no
// allocation).
func MakeKey(e ElemClass, o OpClass, bytes int, lay Layout) Key {
	b := 0
	if bytes > 1 {
		b = bits.Len64(uint64(bytes)) - 1
	}
	return Key{Elem: e, Op: o, SizeLog2: uint8(b), Nodes: clamp16(lay.Nodes), PPN: clamp16(lay.PPN)}
}

func clamp16(v int) uint16 { return uint16(min(max(v, 1), math.MaxUint16)) }

// Layout returns the key's layout.
func (k Key) Layout() Layout { return Layout{Nodes: int(k.Nodes), PPN: int(k.PPN)} }

// Range returns the bucket's byte range [lo, hi].
func (k Key) Range() (lo, hi int) {
	lo = 1 << k.SizeLog2
	return lo, 2*lo - 1
}

// Bytes is the size the model prices for the bucket: its geometric middle.
func (k Key) Bytes() int {
	return int(math.Round(math.Exp2(float64(k.SizeLog2) + 0.5)))
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/2^%d/%dx%d", k.Elem, k.Op, k.SizeLog2, k.Nodes, k.PPN)
}

// Arm is one plan choice of the tuner: a plan.Shape with the variant, l,
// k and the intra-node transport (IntraShm or IntraCMA; IntraAuto for
// Native) set, Overlap as the variant says, and SegmentBytes 0: the
// tuner's Config.SegmentBytes applies. Arms are plain values; compare them
// with ==.
type Arm = plan.Shape

// MaxTreeRadix is the largest radix of a tree arm (the engine's bound).
const MaxTreeRadix = 64
