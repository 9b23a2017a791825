package dpml

import (
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/dpml/internal/fused"
	"github.com/dpmlgo/dpml/mpi"
)

// Parked clearances (fused.h, dpml_fpark). The drop-in's clearance covers
// the next calls of exactly the arguments of the engine's last call, so a
// program that alternates between sizes entered Go at every change, and a
// size's first call always did. A size's first call after the program
// has run for a while is the most expensive call of all: on the device
// (1x32, after MPI_Init and the program's own start) it took 0.13-0.33 ms
// through Go against 0.08-0.11 ms for the MPI library, every step of the
// Go path (the cgo transition, the key, the plan, the tree's run) several
// times slower than warm, while the same call in C touches a fraction of
// that code and data.
//
// So the engine also parks a clearance per key it has cleared, and one
// per size class of float32 and float64 sums up to fusedMaxBytes for a
// program's first calls (parkReady, after Warm): the C layer runs a call
// that the exact clearance does not cover but a parked one does.
//
// The books stay what they would have been through Go. A tuned key's
// parked budget is KeyState.Untimed of its state, its arm the one the key
// runs next (Peek); at the engine's next call takeBack credits each parked
// clearance's calls with Skip, which lowers Untimed by exactly the calls
// the budget lost, so a budget stays right until the key's state changes
// otherwise: a commit step (any key's), or a call of the key through Go.
// Then the engine parks it again (rearm). At most one clearance covers a
// key at a time: a key's parked clearances are closed while the exact
// clearance is the key's (the same learner key can be two element types,
// and one parked clearance per type), and all of them while a timed
// confirmation block is cleared. Every rank parks the same clearances at
// the same calls: they come from the replicated learner state.

// parkedClear is the Go side of parked clearance i of the C state.
type parkedClear struct {
	used  bool
	tuned bool // a tuner's key (st, key, arm); else a fixed plan of one count
	st    learn.KeyState
	key   costmodel.Key
	arm   costmodel.Arm // the arm the clearance runs (tuned), when armed
	armed bool
	kind  mpi.Kind
	op    mpi.Op
	lo    int         // counts covered: [lo, hi]
	hi    int         //
	tree  *fused.Tree // nil: the MPI library's allreduce
	tick  uint64      // when the engine last parked it (eviction)
}

// parkedView is a communicator's parked clearances.
type parkedView struct {
	p       [fused.Parked]parkedClear
	tick    uint64
	commits uint64        // the tuner's commits when every clearance was last parked
	full    bool          // park every clearance again at the next grant (after a block)
	drop    bool          // forget every clearance at the next grant (SetOverride)
	main    costmodel.Key // the key of the exact clearance, when mainOn
	mainOn  bool
}

// creditParked credits the calls the parked clearances ran since the
// engine's last call (takeBack), the one that ran the latest call last,
// so that the learner's notion of the previous call is right: except
// holds the index not to credit here (-1: none).
func (c *Comm) creditParked(except int) {
	f := c.fz.f
	for i := range c.fz.parked.p {
		if i != except {
			c.creditOneParked(f, i)
		}
	}
}

func (c *Comm) creditOneParked(f *fused.State, i int) {
	p := &c.fz.parked.p[i]
	n := f.ParkedRan(i)
	if !p.used || n == 0 {
		return
	}
	c.fz.calls += n
	if p.tuned {
		p.st.Skip(int(n))
	}
}

// parkCall makes sure the key of the call just run through Go (plan pp)
// has a parked clearance, and parks the keys whose state may have
// changed: all of them after a commit step or when full is set, else the
// call's key and the exact clearance's previous key. tuned: the tuner
// chose pp (key ks); untuned: pp is the fixed plan of these arguments.
// mainOn: the exact clearance is this tuned key's; block: it is a timed
// block, during which no parked clearance runs.
func (c *Comm) parkCall(pp *prepared, kind mpi.Kind, op mpi.Op, count int, untuned, tuned bool, key costmodel.Key, ks learn.KeyState, mainOn, block bool) {
	v := &c.fz.parked
	f := c.fz.f
	v.tick++
	if c.mustSee() || f == nil {
		return
	}
	if v.drop {
		for i := range v.p {
			if v.p[i].used {
				f.Park(i, 0, nil, 0, 0, 0, 0)
			}
			v.p[i] = parkedClear{}
		}
		v.drop, v.mainOn = false, false
	}
	if block {
		for i := range v.p {
			if v.p[i].used {
				f.Park(i, 0, v.p[i].tree, int(v.p[i].kind), int(v.p[i].op), v.p[i].lo, v.p[i].hi)
			}
		}
		v.full, v.mainOn = true, false
		return
	}
	prevMain, prevOn := v.main, v.mainOn
	v.main, v.mainOn = key, mainOn // granted only for a tuned key
	if (tuned || untuned) && c.cRunsCall(&pp.p, kind, op) {
		c.parkNew(kind, op, count, tuned, key, ks, pp)
	}
	all := v.full
	if c.tuner != nil && c.tuner.Commits() != v.commits {
		v.commits, all = c.tuner.Commits(), true
	}
	v.full = false
	for i := range v.p {
		p := &v.p[i]
		if !p.used {
			continue
		}
		if all || (p.tuned && ((tuned && p.key == key) || (prevOn && p.key == prevMain))) {
			c.rearm(i)
		}
	}
}

// parkNew gives the call's key (or, untuned, its arguments) a parked
// clearance unless it has one: a free one, else the one parked longest
// ago. Its budget is set by rearm.
func (c *Comm) parkNew(kind mpi.Kind, op mpi.Op, count int, tuned bool, key costmodel.Key, ks learn.KeyState, pp *prepared) {
	v := &c.fz.parked
	lo, hi := count, count
	if tuned {
		klo, khi := key.Range()
		es := kind.Size()
		lo, hi = (klo+es-1)/es, min(khi, fusedMaxBytes)/es
		if pp.p.Variant == Native {
			hi = khi / es
		}
	}
	free := -1
	for i := range v.p {
		p := &v.p[i]
		if p.used && p.tuned == tuned && p.kind == kind && p.op == op && p.lo == lo && p.hi == hi {
			p.tick = v.tick
			return
		}
		if free < 0 && !p.used {
			free = i
		}
	}
	if free < 0 {
		free = 0
		for i := range v.p {
			if v.p[i].tick < v.p[free].tick {
				free = i
			}
		}
		c.fz.f.Park(free, 0, nil, 0, 0, 0, 0)
	}
	v.p[free] = parkedClear{used: true, tuned: tuned, st: ks, key: key, kind: kind, op: op, lo: lo, hi: hi, tick: v.tick}
	if !tuned {
		v.p[free].tree = c.parkTree(&pp.p)
		if pp.p.Variant != Native && v.p[free].tree == nil {
			v.p[free].used = false
			return
		}
	}
	c.rearm(free)
}

// rearm sets parked clearance i's budget from the state of its key: the
// calls before the key's next sample, of the arm it runs next, when both
// ends of its range run that arm in C; none while the exact clearance is
// the key's or another parked clearance already covers the key. A fixed
// plan's clearance covers every call.
func (c *Comm) rearm(i int) {
	v := &c.fz.parked
	p := &v.p[i]
	f := c.fz.f
	if !p.tuned {
		f.Park(i, maxGrant, p.tree, int(p.kind), int(p.op), p.lo, p.hi)
		return
	}
	n := 0
	if !(v.mainOn && v.main == p.key) && !c.keyParkedElsewhere(i) {
		n = p.st.Untimed()
	}
	if n > 0 {
		if a := p.st.Peek(); !p.armed || a != p.arm {
			p.arm, p.tree = a, nil
			p.armed = c.parkArm(p)
		}
		if !p.armed {
			n = 0
		}
	}
	f.Park(i, int64(n), p.tree, int(p.kind), int(p.op), p.lo, p.hi)
}

// keyParkedElsewhere reports whether another parked clearance of i's key
// has calls left.
func (c *Comm) keyParkedElsewhere(i int) bool {
	v := &c.fz.parked
	for j := range v.p {
		if j != i && v.p[j].used && v.p[j].tuned && v.p[j].key == v.p[i].key && c.fz.f.ParkedBudget(j) > 0 {
			return true
		}
	}
	return false
}

// parkArm sets p.tree for p.arm: true when a call of either end of p's
// range runs that arm as a plan the C layer runs itself (the fused tree
// of one radix, or the MPI library's allreduce) and both ends run the
// same one.
func (c *Comm) parkArm(p *parkedClear) bool {
	es := p.kind.Size()
	a, err := c.plan(p.lo, es, Override(p.arm))
	if err != nil || !c.cRunsCall(&a, p.kind, p.op) {
		return false
	}
	b, err := c.plan(p.hi, es, Override(p.arm))
	if err != nil || !c.cRunsCall(&b, p.kind, p.op) || (a.Variant == Native) != (b.Variant == Native) || a.Radix != b.Radix {
		return false
	}
	p.tree = c.parkTree(&a)
	return a.Variant == Native || p.tree != nil
}

// parkTree is the C view of plan p's tree, nil for the MPI library's
// allreduce or when there is none.
func (c *Comm) parkTree(p *Plan) *fused.Tree {
	if p.Variant == Native {
		return nil
	}
	t, err := c.ftree(p.Radix)
	if err != nil {
		return nil
	}
	return t
}

// parkReady parks a clearance for every size class of float32 and float64
// sums up to fusedMaxBytes (Warm), for a program's first calls: each
// class's key starts where the tuner starts it.
func (c *Comm) parkReady() {
	if !c.fz.foreign || c.fz.f == nil || c.mustSee() {
		return
	}
	c.fz.f.SetGen(c.gen)
	for _, kind := range []mpi.Kind{mpi.KindFloat32, mpi.KindFloat64} {
		es := kind.Size()
		for b := es; b <= fusedMaxBytes; b *= 2 {
			count := b / es
			o, tuned, key, ks := c.peekPlan(kind, mpi.OpSum, count)
			if !tuned && c.off != nil {
				continue // the offload's dispatch rule may route them elsewhere
			}
			p, err := c.plan(count, es, o)
			if err != nil || !c.cRunsCall(&p, kind, mpi.OpSum) {
				continue
			}
			c.parkNew(kind, mpi.OpSum, count, tuned, key, ks, &prepared{p: p})
		}
	}
}

// lastParked returns the parked clearance that ran the communicator's
// latest call and that call's count, or nil.
func (c *Comm) lastParked() (*parkedClear, int) {
	if !c.fz.foreign || c.fz.f == nil {
		return nil, 0
	}
	i, n := c.fz.f.LastParked()
	if i == 0 || !c.fz.parked.p[i-1].used {
		return nil, 0
	}
	return &c.fz.parked.p[i-1], n
}
