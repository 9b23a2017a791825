package learn

import (
	"github.com/dpmlgo/dpml/costmodel"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

// deviceSegment is the engine's default segment for ppn ranks per node on
// the device of the testdata sweeps: 300 MiB of last-level cache, 1 MiB
// slots (DPML_SEGMENT_BYTES).
func deviceSegment(ppn int) int { return min(1<<20, plan.DefaultSegmentBytes(300<<20, ppn)) }

func TestTableErrors(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"schema", `{"schema": 3, "provenance": {}, "entries": []}`, "schema 3"},
		{"tree-in-v1", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "dpml", "leaders": 1, "pipeline": 1, "intra": "tree", "radix": 4, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "schema 1"},
		{"tree-l9", `{"schema": 2, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "dpml", "leaders": 9, "pipeline": 1, "intra": "tree", "radix": 4, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "l=9"},
		{"intra", `{"schema": 2, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "dpml", "leaders": 1, "pipeline": 1, "intra": "ring", "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "intra"},
		{"inter", `{"schema": 2, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 20, "nodes": 4, "ppn": 4, "variant": "dpml", "leaders": 1, "pipeline": 1, "inter": "tree", "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "entry inter"},
		{"inter-native", `{"schema": 2, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 20, "nodes": 4, "ppn": 4, "variant": "native", "leaders": 1, "pipeline": 1, "inter": "ring", "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "native with inter"},
		{"inter-in-v1", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 20, "nodes": 4, "ppn": 4, "variant": "dpml", "leaders": 1, "pipeline": 1, "inter": "ring", "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "schema 1"},
		{"no-schema", `{"provenance": {}, "entries": []}`, "schema 0"},
		{"unknown-field", `{"schema": 1, "provenance": {}, "entries": [], "extra": 1}`, "unknown field"},
		{"variant", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "fast", "leaders": 1, "pipeline": 1, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "variant"},
		{"auto", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "auto", "leaders": 1, "pipeline": 1, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "variant \"auto\""},
		{"elem", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float16", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "dpml", "leaders": 1, "pipeline": 1, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "element class"},
		{"model", `{"schema": 1, "provenance": {}, "model": {"a": -1}, "entries": []}`, "parameter a"},
	} {
		_, err := costmodel.ReadTable(strings.NewReader(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// Entries whose arm is not feasible under the tuner's configuration are skipped.
	tb := &Table{Schema: costmodel.SchemaVersion, Entries: []Entry{
		{Elem: "float32", Op: "arith", Log2Bytes: 20, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 3, Pipeline: 1, State: "frozen"},
		{Elem: "float32", Op: "arith", Log2Bytes: 20, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 4, Pipeline: 1, State: "frozen"},
	}}
	tu := newTuners(t, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
	if n, err := tu.LoadTable(tb); err != nil || n != 1 {
		t.Errorf("LoadTable = %d, %v; want 1 loaded", n, err)
	}
}

// A ring arm (plan.InterRing) is written as "inter": "ring", read back as
// the same arm, and loaded where the arm set has ring twins (several nodes,
// large buckets); on two nodes it is not feasible and is skipped.
func TestTableRingEntry(t *testing.T) {
	en := Entry{Elem: "float32", Op: "arith", Log2Bytes: 22, Nodes: 4, PPN: 8, Variant: "pipelined", Leaders: 8, Pipeline: 2, Inter: "ring", State: "frozen"}
	a, err := en.Arm()
	want := Arm{Variant: plan.Pipelined, Leaders: 8, Pipeline: 2, Intra: plan.IntraShm, Overlap: true, Inter: plan.InterRing}
	if err != nil || a != want {
		t.Fatalf("Arm() = %+v, %v; want %+v", a, err, want)
	}
	if got, mpi := costmodel.EntryOf(mustKey(t, en), a).Inter, costmodel.EntryOf(mustKey(t, en), Arm{Variant: plan.DPML, Inter: plan.InterMPI}).Inter; got != "ring" || mpi != "" {
		t.Errorf("EntryOf(...).Inter: %q for the ring arm, %q for the MPI library's step", got, mpi)
	}
	two := en
	two.Nodes = 2
	tu := newTuners(t, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
	n, err := tu.LoadTable(&Table{Schema: costmodel.SchemaVersion, Entries: []Entry{en, two}})
	if err != nil || n != 1 {
		t.Fatalf("LoadTable = %d, %v; want the 4-node entry loaded, the 2-node one skipped", n, err)
	}
	var buf strings.Builder
	if err := tu.Save(&buf); err != nil {
		t.Fatal(err)
	}
	tb, err := costmodel.ReadTable(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range tb.Entries {
		if e.Nodes == 4 && e.Log2Bytes == 22 {
			found = true
			if b, err := e.Arm(); err != nil || b != want {
				t.Errorf("saved entry reads back as %+v, %v; want %+v", b, err, want)
			}
		}
	}
	if !found {
		t.Errorf("the ring entry is missing from the saved table:\n%s", buf.String())
	}
}

// TestTableSkipsNCCLEntries: entries of the NCCL tuner plugin (Coll set;
// Leaders is a channel count there) read and write like any entry but
// never become DPML plans, even where the count would be a feasible l.
func TestTableSkipsNCCLEntries(t *testing.T) {
	js := `{"schema": 1, "provenance": {"host": "h", "cores": 0, "layout": "1x2", "mpi": "NCCL 2.28.3", "date": "", "command": ""}, "entries": [
	 {"elem": "float32", "op": "arith", "log2_bytes": 20, "nodes": 1, "ppn": 2, "variant": "dpml", "leaders": 2, "pipeline": 1,
	  "estimate_s": 0.001, "samples": 5, "state": "frozen", "coll": "allreduce", "algo": "ring", "proto": "simple",
	  "measured": [{"variant": "native", "leaders": 1, "pipeline": 1, "estimate_s": 0.002, "samples": 5, "proto": "ll128"}]}]}`
	tb, err := costmodel.ReadTable(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if en := tb.Entries[0]; en.Coll != "allreduce" || en.Algo != "ring" || en.Proto != "simple" || en.Measured[0].Proto != "ll128" {
		t.Fatalf("NCCL fields not read: %+v", en)
	}
	var b strings.Builder
	if err := tb.Write(&b); err != nil || !strings.Contains(b.String(), `"coll": "allreduce"`) {
		t.Fatalf("Write lost the NCCL fields (%v):\n%s", err, b.String())
	}
	tu := newTuners(t, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
	if n, err := tu.LoadTable(tb); err != nil || n != 0 {
		t.Errorf("LoadTable of an NCCL table = %d, %v; want 0 loaded", n, err)
	}
}

func TestDefaultTable(t *testing.T) {
	tb := costmodel.DefaultTable()
	if tb.Schema != costmodel.SchemaVersion || tb.Model == nil {
		t.Fatalf("default table: schema %d, model %v", tb.Schema, tb.Model != nil)
	}
	// Its provenance names the measurements it came from, and its
	// entries are starting points, never frozen verdicts.
	if !strings.Contains(tb.Provenance.Command, "run3-971e58e") || !strings.Contains(tb.Provenance.Host, "bench/results/") {
		t.Errorf("the default table does not name its source runs: %+v", tb.Provenance)
	}
	for _, en := range tb.Entries {
		if en.State != "start" {
			t.Errorf("default entry %+v: state %q, want start", en, en.State)
		}
	}
	tu, err := NewTunerFromTable(Config{Budget: -1, SegmentBytes: deviceSegment(32)}, tb)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tu.Infos()); got != len(tb.Entries) {
		t.Errorf("%d of %d default entries loaded", got, len(tb.Entries))
	}
	// costmodel.DefaultTable returns copies.
	tb.Entries = nil
	if len(costmodel.DefaultTable().Entries) == 0 {
		t.Error("costmodel.DefaultTable shares its entries")
	}
}

// TestStartEntriesExplore: "start" entries (the default table's) begin the
// hill-climb at their arm instead of freezing it.
func TestStartEntriesExplore(t *testing.T) {
	tu, err := NewTunerFromTable(Config{Budget: -1, SegmentBytes: deviceSegment(32)}, costmodel.DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range costmodel.DefaultTable().Entries {
		k, _ := en.Key()
		a, _ := en.Arm()
		in, ok := tu.Info(k)
		if !ok || in.State != Exploring || in.Arm != a {
			t.Fatalf("entry %+v: loaded as %+v (found %v), want exploring at its arm", en, in, ok)
		}
	}
}

// TestStartEntriesLazy: a table's start entries cost a tuner's setup
// nothing per key (no entry is priced before the key's first call), yet
// the first call of each key runs its start arm, and the fingerprint
// already tells the starts apart.
//
// Mutation check: entry() not applying the start makes the first Choose
// return the model's pick ("first call ran ..., want the start ...").
func TestStartEntriesLazy(t *testing.T) {
	cfg := DefaultConfig() // the budgeted learner: a start is the key's pick
	cfg.SegmentBytes = deviceSegment(32)
	tu, err := NewTunerFromTable(cfg, costmodel.DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tu.Infos()); n != len(costmodel.DefaultTable().Entries) {
		t.Fatalf("%d keys reported, want the table's %d", n, len(costmodel.DefaultTable().Entries))
	}
	empty, err := NewTuner(cfg, costmodel.DefaultTable().ModelOr(costmodel.DefaultModel()))
	if err != nil {
		t.Fatal(err)
	}
	if tu.Fingerprint() == empty.Fingerprint() {
		t.Error("the fingerprint does not see the table's starts")
	}
	for _, en := range costmodel.DefaultTable().Entries {
		k, _ := en.Key()
		a, _ := en.Arm()
		if got := tu.Choose(k); got != a {
			t.Fatalf("entry %+v: first call ran %v, want the start %v", en, got, a)
		}
		if in, ok := tu.Info(k); !ok || in.Arm != a || in.Calls != 0 {
			t.Fatalf("entry %+v after Choose: %+v (found %v), want its start %v and no call recorded", en, in, ok, a)
		}
	}
}

// TestVerdictsLazy: a table's verdicts of keys not called yet are applied
// at each key's first call, not at load (no key is priced at load), and
// everything that reads the tuner sees them as applied: Info and Table
// before the call, the key's state after it, for the budgeted learner and
// for the climb, alike to a tuner that called every key before loading
// (where LoadTable applies them at once). Mutation: startEntry ignoring a
// verdict's estimate -> "budget 0, 2^2 before its call: {... Estimate:
// 4.21668e-06 ...}, want frozen, estimate 1.2345e-05, 40 samples".
func TestVerdictsLazy(t *testing.T) {
	lay := Layout{Nodes: 1, PPN: 32}
	var tb Table
	tb.Schema = costmodel.SchemaVersion
	sizes := []int{2, 10, 14, 20}
	for i, lg := range sizes {
		tb.Entries = append(tb.Entries, Entry{Elem: "float32", Op: "arith", Log2Bytes: lg, Nodes: 1, PPN: 32,
			Variant: "dpml", Leaders: []int{1, 8, 16, 32}[i], Pipeline: 1, Estimate: 1.2345e-5 * float64(i+1), Samples: 40, State: "frozen"})
	}
	for _, budget := range []float64{0, -1} {
		cfg := DefaultConfig()
		cfg.Budget = budget
		cfg.SegmentBytes = deviceSegment(32)
		if budget < 0 {
			cfg.Budget = -1
		}
		lazy := newTuners(t, 1, cfg, costmodel.DefaultModel())[0]
		eager := newTuners(t, 1, cfg, costmodel.DefaultModel())[0]
		for _, lg := range sizes {
			eager.Choose(costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<lg, lay)) // live before the load: applied at once
		}
		for _, tu := range []*Tuner{lazy, eager} {
			if n, err := tu.LoadTable(&tb); err != nil || n != len(sizes) {
				t.Fatalf("LoadTable: %d, %v", n, err)
			}
		}
		if len(lazy.keys) != 0 {
			t.Errorf("budget %g: %d keys priced at load, want none", budget, len(lazy.keys))
		}
		if lazy.Fingerprint() == newTuners(t, 1, cfg, costmodel.DefaultModel())[0].Fingerprint() {
			t.Errorf("budget %g: the fingerprint does not see the pending verdicts", budget)
		}
		for i, lg := range sizes {
			k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<lg, lay)
			in, ok := lazy.Info(k)
			want := 1.2345e-5 * float64(i+1)
			if !ok || in.State != Frozen || in.Estimate != want || in.Samples != 40 {
				t.Fatalf("budget %g, 2^%d before its call: %+v (found %v), want frozen, estimate %g, 40 samples", budget, lg, in, ok, want)
			}
			if a, b := lazy.Choose(k), eager.Choose(k); a != b {
				t.Errorf("budget %g, 2^%d: first call runs %v, the eagerly loaded tuner %v", budget, lg, a, b)
			}
			li, _ := lazy.Info(k)
			ei, _ := eager.Info(k)
			if li.State != ei.State || li.Estimate != ei.Estimate || li.Stride != ei.Stride || li.Samples != ei.Samples {
				t.Errorf("budget %g, 2^%d after its call: %+v, eagerly %+v", budget, lg, li, ei)
			}
		}
		if got, want := len(lazy.Table().Entries), len(eager.Table().Entries); got != want {
			t.Errorf("budget %g: Table has %d entries, the eager tuner's %d", budget, got, want)
		}
	}
}

func mustKey(t *testing.T, en Entry) Key {
	t.Helper()
	k, err := en.Key()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestMeasured: Measured answers what a scan of Infos for a key with
// calls and samples does, at every step of a tuner loaded with verdicts
// whose keys are then called one by one, and it makes no entry for the
// keys not called. Mutation: Measured testing calls alone reports true
// after the first call of a key with no samples yet (a fresh key).
func TestMeasured(t *testing.T) {
	lay := Layout{Nodes: 1, PPN: 32}
	var tb Table
	tb.Schema = costmodel.SchemaVersion
	for i, lg := range []int{2, 10, 14} {
		tb.Entries = append(tb.Entries, Entry{Elem: "float32", Op: "arith", Log2Bytes: lg, Nodes: 1, PPN: 32,
			Variant: "dpml", Leaders: []int{1, 8, 16}[i], Pipeline: 1, Estimate: 1e-5, Samples: 40, State: "frozen"})
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = deviceSegment(32)
	tu := newTuners(t, 1, cfg, costmodel.DefaultModel())[0]
	if _, err := tu.LoadTable(&tb); err != nil {
		t.Fatal(err)
	}
	scan := func() bool {
		for _, in := range tu.Infos() {
			if in.Calls > 0 && in.Samples > 0 {
				return true
			}
		}
		return false
	}
	if tu.Measured() || len(tu.keys) != 0 {
		t.Fatalf("loaded, not called: Measured %v with %d entries, want false with none", tu.Measured(), len(tu.keys))
	}
	for _, lg := range []int{20, 2} { // a fresh key, then a verdict's
		k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<lg, lay)
		for i := 0; i < 3; i++ {
			a := tu.Choose(k)
			tu.Record(k, a, 1e-5)
			if got := tu.Measured(); got != scan() {
				t.Fatalf("2^%d, call %d: Measured %v, a scan of Infos %v", lg, i+1, got, scan())
			}
		}
	}
	if !tu.Measured() {
		t.Error("a called verdict's key with samples: Measured false")
	}
}
