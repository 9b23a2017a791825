package dpml

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// The soak: a long randomized run checking every result against
// the test oracle. Several goroutines per rank, each on its own
// communicator (MPI_THREAD_MULTIPLE), create and free engines on the
// communicator, on duplicates and on splits of it, round after round, and
// make random calls: every element type and op, sizes from 0 to over a
// million elements (multi-segment), every plan family (the tuner's choice,
// forced leaders, pipelines, variants, intra-node paths), in place or not,
// four segment sizes. Every rank draws the same random choices, so the
// calls match across ranks; inputs are a function of (rank, element, seed),
// so every rank computes the reference itself.
//
// Environment (test-only): DPML_TEST_SOAK_DURATION (default 10s: the
// short version in make test), DPML_TEST_SOAK_LAYOUTS (default "3,2";
// layouts separated by ";", each a ppn list: "2,2;3,2;4;1,1,1"),
// DPML_TEST_SOAK_GOROUTINES (default 2), DPML_TEST_SOAK_MAX (largest
// count, default 1200000). make soak runs the long version, also under the
// race detector.
func TestSoak(t *testing.T) {
	dur := 10 * time.Second
	if s := os.Getenv("DPML_TEST_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	gs := envInt(t, "DPML_TEST_SOAK_GOROUTINES", 2)
	maxCount := envInt(t, "DPML_TEST_SOAK_MAX", 1_200_000)
	layouts := "3,2"
	if s := os.Getenv("DPML_TEST_SOAK_LAYOUTS"); s != "" {
		layouts = s
	}
	for _, ls := range strings.Split(layouts, ";") {
		var lay mpitest.Layout
		for _, p := range strings.Split(ls, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				t.Fatalf("DPML_TEST_SOAK_LAYOUTS %q: %v", layouts, err)
			}
			lay.PPN = append(lay.PPN, n)
		}
		t.Run(strings.ReplaceAll(ls, ",", "+"), func(t *testing.T) {
			mpitest.RunLayoutThread(t, lay, mpi.ThreadMultiple, func(t *testing.T, w *mpi.Comm) {
				soak(t, w, lay, dur, gs, maxCount)
			})
		})
	}
}

func envInt(t *testing.T, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", name, s)
		}
		return n
	}
	return def
}

type soakStats struct {
	calls, bytes, comms, elems int64
	plans                      map[string]int64
}

func soak(t *testing.T, w *mpi.Comm, lay mpitest.Layout, dur time.Duration, gs, maxCount int) {
	parents := make([]*mpi.Comm, gs)
	for g := range parents {
		var err error
		if parents[g], err = w.Dup(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	stats := make([]soakStats, gs)
	var wg sync.WaitGroup
	for g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[g] = soakWorker(w, parents[g], g, start, dur, maxCount)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, p := range parents {
		if err := p.Free(); err != nil {
			t.Fatal(err)
		}
	}
	var tot soakStats
	tot.plans = map[string]int64{}
	for _, s := range stats {
		tot.calls += s.calls
		tot.bytes += s.bytes
		tot.comms += s.comms
		tot.elems += s.elems
		for k, v := range s.plans {
			tot.plans[k] += v
		}
	}
	// Every rank ran the same calls: any difference is a bug of the soak.
	mine := []int64{tot.calls, tot.bytes}
	all := make([]int64, 2*w.Size())
	if err := mpi.Allgather(w, mine, all); err != nil {
		t.Fatal(err)
	}
	for r := range w.Size() {
		if all[2*r] != tot.calls || all[2*r+1] != tot.bytes {
			t.Fatalf("rank %d made %d calls, this rank %d", r, all[2*r], tot.calls)
		}
	}
	if w.Rank() == 0 {
		var plans []string
		for k, v := range tot.plans {
			plans = append(plans, fmt.Sprintf("%s %d", k, v))
		}
		fmt.Printf("soak: layout %s, %d goroutines, %v: %d calls, %.1f MB per rank (%d elements), %d communicators set up and freed; plans: %s\n",
			lay, gs, elapsed.Round(time.Second), tot.calls, float64(tot.bytes)/1e6, tot.elems, tot.comms, strings.Join(sortedStrings(plans), ", "))
	}
	if tot.calls == 0 {
		t.Fatal("no call made")
	}
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// soakWorker runs rounds on its parent communicator until the ranks agree
// that dur has passed. A failure prints its cause and aborts the job (a
// goroutine cannot stop the test, and the other ranks would wait).
func soakWorker(w, parent *mpi.Comm, g int, start time.Time, dur time.Duration, maxCount int) soakStats {
	rng := rand.New(rand.NewPCG(0x50a4, uint64(g))) // the same on every rank
	st := soakStats{plans: map[string]int64{}}
	fail := func(format string, args ...any) {
		fmt.Printf("soak failure: rank %d goroutine %d: %s\n", w.Rank(), g, fmt.Sprintf(format, args...))
		os.Stdout.Sync()
		_ = mpi.Abort(w, 1)
		select {}
	}
	for round := 0; ; round++ {
		comm := parent
		var own *mpi.Comm
		var err error
		switch rng.IntN(3) {
		case 1:
			own, err = parent.Dup()
		case 2:
			// Two halves by parity: other sizes and layouts.
			own, err = parent.Split(parent.Rank()%2, parent.Rank())
		}
		if err != nil {
			fail("round %d: communicator: %v", round, err)
		}
		if own != nil {
			comm = own
		}
		seg := []int{4 << 10, 16 << 10, 64 << 10, 1 << 20}[rng.IntN(4)]
		c, err := New(comm, WithSegmentBytes(seg), WithTimeout(5*time.Minute))
		if err != nil {
			fail("round %d: New: %v", round, err)
		}
		d, err := describeComm(c, comm)
		if err != nil {
			fail("round %d: %v", round, err)
		}
		for i := range 20 {
			var err error
			switch rng.IntN(12) {
			case 0:
				err = soakCall[int8](rng, d, &st, maxCount)
			case 1:
				err = soakCall[int16](rng, d, &st, maxCount)
			case 2:
				err = soakCall[int32](rng, d, &st, maxCount)
			case 3:
				err = soakCall[int64](rng, d, &st, maxCount)
			case 4:
				err = soakCall[uint8](rng, d, &st, maxCount)
			case 5:
				err = soakCall[uint16](rng, d, &st, maxCount)
			case 6:
				err = soakCall[uint32](rng, d, &st, maxCount)
			case 7:
				err = soakCall[uint64](rng, d, &st, maxCount)
			case 8:
				err = soakCall[float32](rng, d, &st, maxCount)
			case 9:
				err = soakCall[float64](rng, d, &st, maxCount)
			case 10:
				err = soakCall[complex64](rng, d, &st, maxCount)
			case 11:
				err = soakCall[complex128](rng, d, &st, maxCount)
			}
			if err != nil {
				fail("round %d call %d (segment %d, communicator of %d ranks on %d nodes): %v", round, i, seg, c.Size(), c.Nodes(), err)
			}
		}
		if err := c.Close(); err != nil {
			fail("round %d: Close: %v", round, err)
		}
		if own != nil {
			if err := own.Free(); err != nil {
				fail("round %d: free: %v", round, err)
			}
		}
		st.comms++
		// Stop when any rank's clock says so: decided together.
		stop := []int32{0}
		if time.Since(start) > dur {
			stop[0] = 1
		}
		if err := mpi.AllreduceInPlace(parent, stop, mpi.OpMax); err != nil {
			fail("round %d: stop: %v", round, err)
		}
		if stop[0] != 0 {
			return st
		}
	}
}

// describeComm is describe without a *testing.T (goroutines).
func describeComm(c *Comm, w *mpi.Comm) (world, error) {
	mine := []int64{int64(c.NodeIndex()), int64(c.NodeRank())}
	all := make([]int64, 2*w.Size())
	if err := mpi.Allgather(w, mine, all); err != nil {
		return world{}, err
	}
	d := world{size: w.Size(), rank: w.Rank(), nodes: c.Nodes(), c: c}
	d.byNode = make([][]int, c.Nodes())
	for r := 0; r < w.Size(); r++ {
		n, l := int(all[2*r]), int(all[2*r+1])
		for len(d.byNode[n]) <= l {
			d.byNode[n] = append(d.byNode[n], -1)
		}
		d.byNode[n][l] = r
	}
	var err error
	d.places, err = gatherPlaces(c, w, d.byNode)
	return d, err
}

// soakCall makes one random call of element type T and checks it against
// the oracle (bit for bit where the order is fixed, by value otherwise)
// and against every other rank's result.
func soakCall[T mpi.Number](rng *rand.Rand, d world, st *soakStats, maxCount int) error {
	var ops []mpi.Op
	for _, op := range mpi.Ops() {
		if oracleOp[T](op) != nil {
			ops = append(ops, op)
		}
	}
	op := ops[rng.IntN(len(ops))]
	var count int
	switch r := rng.IntN(100); {
	case r < 40:
		count = rng.IntN(64)
	case r < 80:
		count = rng.IntN(8192)
	case r < 97:
		count = rng.IntN(min(200_000, maxCount) + 1)
	default:
		count = rng.IntN(maxCount + 1)
	}
	maxL := d.c.MaxLeaders()
	var o Override
	switch rng.IntN(4) {
	case 1:
		o.Leaders = 1 + rng.IntN(maxL)
	case 2:
		o.Leaders, o.Pipeline = 1+rng.IntN(maxL), 1+rng.IntN(4)
		o.Inter = []plan.Inter{plan.InterAuto, plan.InterRing}[rng.IntN(2)]
	case 3:
		o.Variant = []Variant{DPML, Pipelined, Native}[rng.IntN(3)]
		o.Leaders, o.Pipeline = 1+rng.IntN(maxL), 1+rng.IntN(4)
		o.Intra = []Intra{IntraAuto, IntraShm, IntraCMA, IntraTree}[rng.IntN(4)]
		o.Inter = []plan.Inter{plan.InterAuto, plan.InterMPI, plan.InterRing}[rng.IntN(3)]
	}
	inPlace := rng.IntN(2) == 0
	seed := rng.Uint64()
	// Random floats need a known reduction order: a forced plan that is
	// not the MPI library's own, on at most two nodes (the inter-node
	// combination of two values is one commutative step). Otherwise
	// small integers, exact in any order.
	var z T
	isFloat := false
	switch any(z).(type) {
	case float32, float64, complex64, complex128:
		isFloat = true
	}
	exact := !isFloat || o == (Override{}) || o.Variant == Native || d.nodes > 2 || d.c.Nodes() == d.c.Size()
	tc := testCase{count: count, op: op, o: o, inPlace: inPlace, exact: exact, seed: seed}

	send := make([]T, count)
	for i := range send {
		send[i] = input[T](d.rank, i, seed, exact, op)
	}
	recv := send
	var err error
	if inPlace {
		err = AllreduceInPlaceWith(d.c, recv, op, o)
	} else {
		recv = make([]T, count)
		err = AllreduceWith(d.c, send, recv, op, o)
	}
	if err != nil {
		return fmt.Errorf("%T %v: %w", z, tc, err)
	}
	want := reference[T](d, tc)
	if p := d.c.LastPlan(); p.Intra == IntraTree {
		want = treeReference[T](d, tc, p)
	}
	for i := range want {
		if exact && recv[i] != want[i] && !(isNaN(recv[i]) && isNaN(want[i])) || !exact && !sameBits(recv[i], want[i]) {
			return fmt.Errorf("%T %v plan %+v: element %d = %v, want %v", z, tc, d.c.LastPlan(), i, recv[i], want[i])
		}
	}
	p := d.c.LastPlan()
	key := p.Variant.String()
	if p.Intra != IntraShm {
		key += "+" + p.Intra.String()
	}
	st.plans[key]++
	st.calls++
	st.elems += int64(count)
	st.bytes += int64(count) * int64(mpi.KindOf[T]().Size())
	return nil
}

func isNaN[T mpi.Number](v T) bool { return v != v }
