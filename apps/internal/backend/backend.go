// Package backend is the allreduce the mini-apps run on: the MPI library's
// MPI_Allreduce (native) or the DPML engine (dpml, with the plan chosen by
// the engine or with a fixed leader count), behind one call that also
// accounts the time spent in it.
//
// Backend names (flag -backend of the apps):
//
//	native          mpi.Allreduce on the world communicator
//	dpml            dpml.AllreduceInPlaceWith, plan chosen by the engine
//	                (its tuner may change it from call to call)
//	dpml-l4         the DPML variant with l = 4 leaders per node, fixed
//	dpml-l4-k2      the Pipelined variant, l = 4, pipeline depth k = 2
//
// Every call is timed with mpi.Wtime around it and added to the counter
// (Stat) named by the caller, so an app reports its time in allreduce split
// by purpose (HPCG: ddot; MiniAMR: checksum, block counts, ...).
package backend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/apps/internal/report"
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/mpi"
)

// Spec names a backend.
type Spec struct {
	DPML     bool
	Leaders  int // 0: chosen by the engine
	Pipeline int // 0: chosen by the engine
}

// Parse reads a backend name: native, dpml, dpml-lL, dpml-lL-kK (also
// dpml-kK).
func Parse(s string) (Spec, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "native", "mpi":
		return Spec{}, nil
	case "dpml", "auto":
		return Spec{DPML: true}, nil
	}
	rest, ok := strings.CutPrefix(s, "dpml-")
	if !ok {
		return Spec{}, fmt.Errorf("backend %q: want native, dpml, dpml-l<L> or dpml-l<L>-k<K>", s)
	}
	sp := Spec{DPML: true}
	for _, part := range strings.Split(rest, "-") {
		if len(part) < 2 {
			return Spec{}, fmt.Errorf("backend %q: bad part %q", s, part)
		}
		n, err := strconv.Atoi(part[1:])
		if err != nil || n < 1 {
			return Spec{}, fmt.Errorf("backend %q: bad part %q", s, part)
		}
		switch part[0] {
		case 'l':
			sp.Leaders = n
		case 'k':
			sp.Pipeline = n
		default:
			return Spec{}, fmt.Errorf("backend %q: bad part %q (want l<N> or k<N>)", s, part)
		}
	}
	return sp, nil
}

// String is the canonical name, which Parse reads back.
func (s Spec) String() string {
	if !s.DPML {
		return "native"
	}
	n := "dpml"
	if s.Leaders > 0 {
		n += "-l" + strconv.Itoa(s.Leaders)
	}
	if s.Pipeline > 0 {
		n += "-k" + strconv.Itoa(s.Pipeline)
	}
	return n
}

// Override is the dpml plan override of the spec. A spec that fixes l or k
// also fixes the variant (DPML, or Pipelined when k > 1), so that no tuner
// can change the plan: a fixed plan adds in the same order on every call.
func (s Spec) Override() dpml.Override {
	o := dpml.Override{Leaders: s.Leaders, Pipeline: s.Pipeline}
	if s.Leaders > 0 || s.Pipeline > 0 {
		o.Variant = dpml.DPML
		if s.Pipeline > 1 {
			o.Variant = dpml.Pipelined
		}
	}
	return o
}

// Fixed reports whether every call runs the same plan: native, or dpml
// with l or k given. The engine's automatic choice (dpml) may change from
// call to call (the online tuner), and with it the order in which
// floating-point sums are added.
func (s Spec) Fixed() bool { return !s.DPML || s.Leaders > 0 || s.Pipeline > 0 }

// Stat accounts the calls of one purpose on this rank.
type Stat struct {
	Name    string  `json:"name"`
	Calls   int64   `json:"calls"`
	Elems   int64   `json:"elems"` // elements over all calls
	Bytes   int64   `json:"bytes"` // bytes over all calls (one rank's input)
	Seconds float64 `json:"seconds"`
	// MaxCount is the largest element count of one call.
	MaxCount int `json:"max_count"`
}

// Reducer runs allreduces on one backend. It is used from one goroutine,
// collectively: every rank makes the same calls in the same order.
type Reducer struct {
	spec  Spec
	world *mpi.Comm
	d     *dpml.Comm
	o     dpml.Override
	stats []*Stat
}

// New prepares the backend over world. For dpml it builds the engine
// (collective, like dpml.New).
func New(world *mpi.Comm, spec Spec, opts ...dpml.Option) (*Reducer, error) {
	if world == nil {
		return nil, errors.New("backend: nil communicator")
	}
	r := &Reducer{spec: spec, world: world, o: spec.Override()}
	if spec.DPML {
		d, err := dpml.New(world, opts...)
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", spec, err)
		}
		r.d = d
	}
	return r, nil
}

// Spec returns the backend's spec.
func (r *Reducer) Spec() Spec { return r.spec }

// Engine returns the DPML communicator (nil for native).
func (r *Reducer) Engine() *dpml.Comm { return r.d }

// Close releases the engine (collective).
func (r *Reducer) Close() error {
	if r == nil || r.d == nil {
		return nil
	}
	err := r.d.Close()
	r.d = nil
	return err
}

// Counter returns the statistics record named name, creating it on first
// use. Counters keep their order of creation.
func (r *Reducer) Counter(name string) *Stat {
	for _, s := range r.stats {
		if s.Name == name {
			return s
		}
	}
	s := &Stat{Name: name}
	r.stats = append(r.stats, s)
	return s
}

// Stats returns a copy of every counter, in order of creation.
func (r *Reducer) Stats() []Stat {
	out := make([]Stat, len(r.stats))
	for i, s := range r.stats {
		out[i] = *s
	}
	return out
}

// Total is the sum of all counters.
func (r *Reducer) Total() Stat {
	t := Stat{Name: "total"}
	for _, s := range r.stats {
		t.Calls += s.Calls
		t.Elems += s.Elems
		t.Bytes += s.Bytes
		t.Seconds += s.Seconds
		t.MaxCount = max(t.MaxCount, s.MaxCount)
	}
	return t
}

// Reset zeroes every counter (keeping them).
func (r *Reducer) Reset() {
	for _, s := range r.stats {
		*s = Stat{Name: s.Name}
	}
}

// AllreduceInPlace combines buf over all ranks with op, in place, and adds
// the call to st (nil: not accounted).
func AllreduceInPlace[T mpi.Number](r *Reducer, st *Stat, buf []T, op mpi.Op) error {
	t0 := mpi.Wtime()
	var err error
	if r.d != nil {
		err = dpml.AllreduceInPlaceWith(r.d, buf, op, r.o)
	} else {
		err = mpi.AllreduceInPlace(r.world, buf, op)
	}
	dt := mpi.Wtime() - t0
	if st != nil {
		st.Calls++
		st.Elems += int64(len(buf))
		st.Bytes += int64(len(buf)) * int64(mpi.KindOf[T]().Size())
		st.Seconds += dt
		st.MaxCount = max(st.MaxCount, len(buf))
	}
	if err != nil {
		return fmt.Errorf("allreduce (%s, %d elements): %w", r.spec, len(buf), err)
	}
	return nil
}

// Sum returns the sum of x over all ranks (one float64 allreduce).
func (r *Reducer) Sum(st *Stat, x float64) (float64, error) {
	b := [1]float64{x}
	err := AllreduceInPlace(r, st, b[:], mpi.OpSum)
	return b[0], err
}

// PlanInfo describes the plan a call runs with.
type PlanInfo = report.PlanInfo

// Plan returns the plan of a call of count elements of elemSize bytes
// (native: the MPI library's allreduce).
func (r *Reducer) Plan(count, elemSize int) PlanInfo {
	pi := PlanInfo{Count: count, ElemSize: elemSize, Variant: "native", Leaders: 1, Pipeline: 1, Segments: 1}
	if r.d == nil {
		return pi
	}
	p, err := r.d.Plan(count, elemSize, r.o)
	if err != nil {
		pi.Variant = "error: " + err.Error()
		return pi
	}
	pi.Variant, pi.Leaders, pi.Pipeline, pi.Segments = p.Variant.String(), p.Leaders, p.Pipeline, p.Segments
	return pi
}

// Int64 is AllreduceInPlace on int64, accounted to the counter name.
func (r *Reducer) Int64(name string, buf []int64, op mpi.Op) error {
	return AllreduceInPlace(r, r.Counter(name), buf, op)
}

// Float64 is AllreduceInPlace on float64, accounted to the counter name.
func (r *Reducer) Float64(name string, buf []float64, op mpi.Op) error {
	return AllreduceInPlace(r, r.Counter(name), buf, op)
}

// Open is what both apps do first: gather the node layout (for the report)
// and build the reducer of spec. Both steps are collective.
func Open(world *mpi.Comm, spec Spec) (Layout, *Reducer, error) {
	lay, err := GatherLayout(world)
	if err != nil {
		return Layout{}, nil, err
	}
	r, err := New(world, spec)
	return lay, r, err
}
