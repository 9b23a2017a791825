package learn

import (
	"github.com/dpmlgo/dpml/costmodel"
	"math"
	"math/bits"
	"slices"

	"github.com/dpmlgo/dpml/plan"
)

// pack maps key k to a uint64 map key.
func pack(k Key) uint64 {
	return uint64(k.Elem) | uint64(k.Op)<<8 | uint64(k.SizeLog2)<<16 | uint64(k.Nodes)<<24 | uint64(k.PPN)<<40
}

// unpack is pack's inverse.
func unpack(p uint64) Key {
	return Key{Elem: ElemClass(p & 0xff), Op: OpClass(p >> 8 & 0xff), SizeLog2: uint8(p >> 16), Nodes: uint16(p >> 24), PPN: uint16(p >> 40)}
}

// priced returns arm a as the plan the model prices: with segment seg.
func priced(a Arm, seg int) plan.Shape {
	a.SegmentBytes = seg
	return a
}

// level is one step of the pipeline axis: DPML (k = 1), then Pipelined
// with growing k; with Config.CMA each step is followed by its
// cross-memory-attach twin, so switching the intra-node path is one move.
type level struct {
	v     plan.Variant
	k     int
	intra plan.Intra // IntraShm or IntraCMA
}

// cmaMinBytes: buckets below it get no CMA arms (a system call per rank and
// leader cannot pay off on a few cache lines).
const cmaMinBytes = 16 << 10

// armSet is the feasible arms of a (layout, size bucket) and their
// neighbourhood graph: a grid over l (ascending) x level, where each arm's
// neighbours are the adjacent cells, plus the Native arm. Native is not on
// the grid's (close to unimodal) surface, so it has no neighbours: the
// learner climbs the grid and measures Native once per episode on the side.
type armSet struct {
	arms   []Arm
	ls     []int
	levels []level
	grid   [][]int16 // grid[li][ki]: arm index or -1
	radix  []int     // the tree arms' radixes, ascending
	tree   []int16   // tree[i]: the arm index of radix[i]
	trees  []int     // l of the multi-tree arms (l trees over disjoint partitions), ascending
	treeL  []int16   // treeL[i]: the arm index of trees[i]
	hookR  int       // the radix of the multi-tree arms (nearest costmodel.DefaultTreeRadix)
	twin   []int16   // twin[i]: the offload twin of arm i, or -1
	ring   []int16   // ring[i]: the ring twin of arm i (plan.InterRing), or -1
	native int       // arm index or -1
	nbr    [][]uint8 // neighbours of each arm
}

// maxNeighbours: the four grid directions, twins (cross-memory attach,
// offload, ring), and a tree line's link (a tree arm: its two radix neighbours,
// the (l = 1) and the (l = max) DPML cells, a twin; the cells link back to
// one radix only): at most 6 in a climbed set; in a set searched whole
// (at most exhaustiveArms arms) every other arm but Native.
const maxNeighbours = exhaustiveArms - 1

// maxTreeRadix is the largest radix of a tree arm (the engine's bound).
const maxTreeRadix = costmodel.MaxTreeRadix

// newArmSet builds the arms of key k:
//
//	l      1, 2, 4, ... <= ppn, and ppn itself; l*64 <= the bucket's largest size
//	level  DPML (k = 1); multi-node also Pipelined k in cfg.Pipelines with
//	       l*k*64 <= the bucket's largest size, and k = 1 only when the
//	       bucket can span more than one segment
//	tree   for buckets whose smallest size is at most cfg.TreeBytes: the
//	       reduction tree (l = 1) with Config.TreeRadixes (4, 8, 16, ...) up to the first
//	       that makes the tree flat (>= ppn-1, at most 64), a line of arms
//	       (neighbours: the next radix either way) linked to the grid at
//	       (l = 1, DPML, copies) by the radix nearest costmodel.DefaultTreeRadix
//	trees  in the same buckets on several nodes, l = 2, 4, ... trees over
//	       disjoint partitions (at most plan.MaxTrees and ppn, l*64 <= the
//	       bucket's largest size) at that radix, a line hooked to the tree
//	       arm. Not on one node: there the l trees' inner ranks fold as much
//	       as one tree's and nothing runs concurrently across nodes; the
//	       device (1 x 16) measured them slower than the copies at every
//	       size, and the learner once settled a 16 KiB key on one, 1.44x
//	       the best
//	native unless cfg.NoNative; alone when ppn = 1
func newArmSet(k Key, cfg *Config) *armSet {
	s := &armSet{native: -1}
	lay := k.Layout()
	lo, hi := k.Range()
	hi = max(hi, plan.CacheLine)
	if lay.PPN > 1 {
		for l := 1; l <= lay.PPN && l*plan.CacheLine <= hi; l *= 2 {
			s.ls = append(s.ls, l)
		}
		if last := s.ls[len(s.ls)-1]; last != lay.PPN && lay.PPN*plan.CacheLine <= hi {
			s.ls = append(s.ls, lay.PPN)
		}
		cma := cfg.CMA && hi >= cmaMinBytes
		add := func(v plan.Variant, k int) {
			s.levels = append(s.levels, level{v, k, plan.IntraShm})
			if cma {
				s.levels = append(s.levels, level{v, k, plan.IntraCMA})
			}
		}
		add(plan.DPML, 1)
		if lay.Nodes > 1 {
			for _, kk := range cfg.Pipelines {
				if kk == 1 && (cfg.SegmentBytes <= 0 || hi <= cfg.SegmentBytes) {
					continue
				}
				if kk*plan.CacheLine <= hi {
					add(plan.Pipelined, kk)
				}
			}
		}
	}
	s.grid = make([][]int16, len(s.ls))
	for li, l := range s.ls {
		s.grid[li] = make([]int16, len(s.levels))
		for ki, lv := range s.levels {
			s.grid[li][ki] = -1
			if l*lv.k*plan.CacheLine <= hi {
				s.grid[li][ki] = int16(len(s.arms))
				s.arms = append(s.arms, Arm{Variant: lv.v, Leaders: l, Pipeline: lv.k, Intra: lv.intra, Overlap: lv.v.Overlaps()})
			}
		}
	}
	if lay.PPN > 1 && cfg.TreeBytes > 0 && lo <= cfg.TreeBytes {
		for _, r := range cfg.TreeRadixes {
			s.radix = append(s.radix, r)
			s.tree = append(s.tree, int16(len(s.arms)))
			s.arms = append(s.arms, Arm{Variant: plan.DPML, Leaders: 1, Pipeline: 1, Intra: plan.IntraTree, Radix: r})
			if r >= lay.PPN-1 {
				break // flat: a larger radix builds the same tree
			}
		}
		if len(s.radix) > 0 {
			s.hookR = s.radix[0]
			for _, r := range s.radix {
				if absInt(r-costmodel.DefaultTreeRadix) < absInt(s.hookR-costmodel.DefaultTreeRadix) {
					s.hookR = r
				}
			}
			for l := 2; lay.Nodes > 1 && l <= min(lay.PPN, plan.MaxTrees) && l*plan.CacheLine <= hi; l *= 2 {
				s.trees = append(s.trees, l)
				s.treeL = append(s.treeL, int16(len(s.arms)))
				s.arms = append(s.arms, Arm{Variant: plan.DPML, Leaders: l, Pipeline: 1, Intra: plan.IntraTree, Radix: s.hookR})
			}
		}
	}
	// In-network offload twins (several nodes, buckets whose every call
	// fits the offload's payload per leader, so the engine never falls
	// back to the host under an offload arm's name): the arms whose
	// inter-node step the offload serves, with Offload set.
	s.twin = make([]int16, len(s.arms))
	for i := range s.twin {
		s.twin[i] = -1
	}
	if lay.Nodes > 1 && lay.PPN > 1 && cfg.OffloadBytes > 0 && hi <= cfg.OffloadBytes*cfg.OffloadLeaders {
		var served []int
		if cfg.OffloadLeaders <= 1 {
			for _, i := range s.tree {
				served = append(served, int(i))
			}
		} else {
			for li, l := range s.ls {
				if l == cfg.OffloadLeaders && s.grid[li][0] >= 0 {
					served = append(served, int(s.grid[li][0]))
				}
			}
		}
		for _, i := range served {
			a := s.arms[i]
			a.Offload = plan.OffloadSharp
			s.twin[i] = int16(len(s.arms))
			s.arms = append(s.arms, a)
			s.twin = append(s.twin, -1)
		}
	}
	// Ring twins (three nodes or more, buckets from cfg.RingBytes): the
	// grid's arms with the ring as their inter-node step, one move away
	// from their host arm, so the learner compares the two steps on
	// otherwise equal plans.
	s.ring = make([]int16, len(s.arms))
	for i := range s.ring {
		s.ring[i] = -1
	}
	grid := 0
	for _, row := range s.grid {
		for _, i := range row {
			if i >= 0 {
				grid++
			}
		}
	}
	// (Only where the twins and Native fit the neighbour lists' uint8
	// indexes: thousands of ranks per node would not.)
	if lay.Nodes >= 3 && cfg.RingBytes > 0 && lo >= cfg.RingBytes && len(s.arms)+grid < math.MaxUint8 {
		for _, row := range s.grid {
			for _, i := range row {
				if i < 0 {
					continue
				}
				a := s.arms[i]
				a.Inter = plan.InterRing
				s.ring[i] = int16(len(s.arms))
				s.arms = append(s.arms, a)
				s.ring = append(s.ring, -1)
				s.twin = append(s.twin, -1)
			}
		}
	}
	if !cfg.NoNative || len(s.arms) == 0 {
		s.native = len(s.arms)
		s.arms = append(s.arms, Arm{Variant: plan.Native, Leaders: 1, Pipeline: 1})
	}
	s.nbr = make([][]uint8, len(s.arms))
	at := func(li, ki int) int {
		if li < 0 || ki < 0 || li >= len(s.grid) || ki >= len(s.levels) {
			return -1
		}
		return int(s.grid[li][ki])
	}
	for li := range s.grid {
		for ki := range s.levels {
			i := at(li, ki)
			if i < 0 {
				continue
			}
			for _, d := range [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
				if j := at(li+d[0], ki+d[1]); j >= 0 {
					s.nbr[i] = append(s.nbr[i], uint8(j))
				}
			}
		}
	}
	link := func(i, j int) {
		s.nbr[i] = append(s.nbr[i], uint8(j))
		s.nbr[j] = append(s.nbr[j], uint8(i))
	}
	for i := 1; i < len(s.tree); i++ {
		link(int(s.tree[i-1]), int(s.tree[i]))
	}
	for i, tw := range s.twin {
		if tw >= 0 {
			link(i, int(tw))
		}
	}
	for i, tw := range s.ring {
		if tw >= 0 {
			link(i, int(tw))
		}
	}
	if len(s.tree) > 0 {
		hook := 0
		for i, r := range s.radix {
			if absInt(r-costmodel.DefaultTreeRadix) < absInt(s.radix[hook]-costmodel.DefaultTreeRadix) {
				hook = i
			}
		}
		if g := at(0, 0); g >= 0 {
			link(int(s.tree[hook]), g)
		}
		// The multi-tree arms: a line from the hook's tree (l = 1).
		prev := int(s.tree[hook])
		for _, i := range s.treeL {
			link(prev, int(i))
			prev = int(i)
		}
		// And to the most leaders: a search that starts on the tree
		// (the model's pick for small sizes) must reach the partitioned
		// plans without crossing l = 1, which is the slowest of them from
		// a few KiB on; the device (1 x 16) saw the learner stay on a
		// tree 2.5x slower than l = 16 at 16 KiB for want of this path.
		if g := at(len(s.grid)-1, 0); g >= 0 && g != at(0, 0) {
			link(int(s.tree[hook]), g)
		}
		// Every other radix sees both cells too (one way, so a cell's
		// neighbours stay few): a search that settles on a radix next to
		// the hook would otherwise never compare it with the copies. The
		// device (1 x 16, 4 B to 1 KiB) saw the learner stay on radix 4
		// or 16, 1.3-1.5x slower than the copies, without ever trying them.
		for i, t := range s.tree {
			if i == hook {
				continue
			}
			for _, g := range []int{at(0, 0), at(len(s.grid)-1, 0)} {
				if g >= 0 && !slices.Contains(s.nbr[t], uint8(g)) {
					s.nbr[t] = append(s.nbr[t], uint8(g))
				}
			}
		}
	}
	// A small set is searched whole: every arm neighbours every other,
	// so an episode samples them all (R calls each, fewer for the ones
	// early rejection drops) and the climb ends on the best measured.
	// Climbing a grid stops on the first stretch where neighbours are
	// within Improve of each other, and on one node they often are at
	// the sizes where the arms differ most further on: the device
	// (1 x 16) saw a 2 KiB key settle on l = 2 after measuring l = 1, 2
	// and 4, never trying l = 8, 15% faster. One node's sets have 9 to
	// 17 arms; an episode then costs tens of calls in keys that run
	// thousands.
	if len(s.arms) <= exhaustiveArms {
		for i := range s.arms {
			if i == s.native {
				continue
			}
			s.nbr[i] = s.nbr[i][:0]
			for j := range s.arms {
				if j != i && j != s.native {
					s.nbr[i] = append(s.nbr[i], uint8(j))
				}
			}
		}
	}
	return s
}

// exhaustiveArms is the largest arm set searched whole (see newArmSet).
const exhaustiveArms = 20

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// index returns the arm's index in the set, or -1 (O(1) for the grid, a
// scan of a few radixes for the tree). It looks at the variant, l, k,
// transport (IntraAuto counts as IntraShm), the tree's radix (0 counts
// as costmodel.DefaultTreeRadix), the offload and the inter-node algorithm
// (InterMPI counts as InterAuto), not at SegmentBytes or Overlap.
func (s *armSet) index(a Arm) int {
	if a.Variant == plan.Native {
		return s.native
	}
	if a.Offload == plan.OffloadSharp {
		a.Offload = plan.OffloadAuto
		if i := s.index(a); i >= 0 && int(s.twin[i]) >= 0 {
			return int(s.twin[i])
		}
		return -1
	}
	switch a.Inter {
	case plan.InterRing:
		a.Inter = plan.InterAuto
		if i := s.index(a); i >= 0 && int(s.ring[i]) >= 0 {
			return int(s.ring[i])
		}
		return -1
	case plan.InterMPI: // the default step, named
		a.Inter = plan.InterAuto
	case plan.InterAuto:
	default:
		return -1
	}
	if a.Intra == plan.IntraTree {
		r := a.Radix
		if r <= 0 {
			r = costmodel.DefaultTreeRadix
		}
		if a.Pipeline > 1 || a.Variant != plan.DPML {
			return -1
		}
		if a.Leaders > 1 {
			if r != s.hookR {
				return -1
			}
			for i, l := range s.trees {
				if l == a.Leaders {
					return int(s.treeL[i])
				}
			}
			return -1
		}
		for i, x := range s.radix {
			if x == r {
				return int(s.tree[i])
			}
		}
		return -1
	}
	intra := a.Intra
	if intra == plan.IntraAuto {
		intra = plan.IntraShm
	}
	li := -1
	if l := a.Leaders; l > 0 {
		if l&(l-1) == 0 {
			if i := bits.Len(uint(l)) - 1; i < len(s.ls) && s.ls[i] == l {
				li = i
			}
		}
		if li < 0 && len(s.ls) > 0 && s.ls[len(s.ls)-1] == l {
			li = len(s.ls) - 1
		}
	}
	if li < 0 {
		return -1
	}
	for ki, lv := range s.levels {
		if lv.v == a.Variant && lv.intra == intra && (lv.k == a.Pipeline || (lv.v == plan.DPML && a.Pipeline <= 1)) {
			return int(s.grid[li][ki])
		}
	}
	return -1
}

// setKey identifies the arm set of a key (element and op classes do not
// change the arms).
func setKey(k Key) uint64 {
	k.Elem, k.Op = 0, 0
	return pack(k)
}
