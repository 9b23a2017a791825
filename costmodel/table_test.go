package costmodel

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

// deviceSegment is the engine's default segment for ppn ranks per node on
// the device of the testdata sweeps: 300 MiB of last-level cache, 1 MiB
// slots (DPML_SEGMENT_BYTES).
func deviceSegment(ppn int) int { return min(1<<20, plan.DefaultSegmentBytes(300<<20, ppn)) }

// tuned returns a tuner that has settled a few keys on the model surface.
func tuned(t *testing.T) (*Tuner, []Key) {
	t.Helper()
	cfg := Config{SegmentBytes: 256 << 10}
	tu := newTuners(t, 1, cfg, DefaultModel())[0]
	tu.SetProvenance(Provenance{Host: "test", Cores: 2, Layout: "4x8", MPI: "none", Date: "2026-01-01T00:00:00Z", Command: "go test"})
	var keys []Key
	for _, lb := range []int{6, 12, 18, 22} {
		for _, e := range []ElemClass{ElemFloat32, ElemInt} {
			k := MakeKey(e, OpArith, 1<<lb, Layout{4, 8})
			keys = append(keys, k)
			if _, err := Simulate([]*Tuner{tu}, k, ModelSurface(perturbed(), k, cfg.SegmentBytes), SimOptions{Calls: 200, Noise: 0.02, Seed: uint64(lb)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One key left mid-exploration.
	k := MakeKey(ElemFloat64, OpMinMax, 1<<20, Layout{4, 8})
	keys = append(keys, k)
	tu.Record(k, tu.Choose(k), 1e-3)
	if err := tu.Commit(tu.Pending()); err != nil {
		t.Fatal(err)
	}
	return tu, keys
}

func TestTableRoundTrip(t *testing.T) {
	tu, keys := tuned(t)
	var buf bytes.Buffer
	if err := tu.Save(&buf); err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTable(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if tb.Provenance.Host != "test" || tb.Model == nil || len(tb.Entries) != len(keys) {
		t.Fatalf("read back: provenance %+v, model %v, %d entries (want %d)", tb.Provenance, tb.Model != nil, len(tb.Entries), len(keys))
	}
	// A second run starts from the table: frozen on the same arms.
	tu2, err := NewTunerFromTable(tu.Config(), tb)
	if err != nil {
		t.Fatal(err)
	}
	if tu2.Model().A != tu.Model().A {
		t.Error("model not carried by the table")
	}
	for _, k := range keys {
		a, _ := tu.Info(k)
		b, ok := tu2.Info(k)
		if !ok {
			t.Fatalf("%v missing after load", k)
		}
		if b.State != Frozen || b.Arm != a.Arm || tu2.Choose(k) != a.Arm {
			t.Errorf("%v: loaded %v %v, saved %v %v", k, b.Arm, b.State, a.Arm, a.State)
		}
		if a.State == Frozen && b.Estimate != a.Estimate {
			t.Errorf("%v: estimate %g after load, %g saved", k, b.Estimate, a.Estimate)
		}
	}
	// Saving the loaded tuner gives the same entries (less the informative
	// per-arm lists, which a load does not restore).
	var buf2 bytes.Buffer
	tu2.SetProvenance(tb.Provenance)
	if err := tu2.Save(&buf2); err != nil {
		t.Fatal(err)
	}
	tb2, err := ReadTable(&buf2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tb.Entries {
		x, y := tb.Entries[i], tb2.Entries[i]
		x.Measured, y.Measured, x.State, y.State = nil, nil, "", ""
		if x.Estimate == 0 { // the mid-exploration key: its loaded estimate is the prior
			x.Estimate, y.Estimate = 0, 0
		}
		xj, _ := json.Marshal(x)
		yj, _ := json.Marshal(y)
		if !bytes.Equal(xj, yj) {
			t.Errorf("entry %d changed:\n%s\n%s", i, xj, yj)
		}
	}
	if tb2.Entries[len(tb2.Entries)-1].State != "frozen" {
		t.Error("loaded entries must start frozen")
	}
}

func TestLoadedEntryReexploresOnDrift(t *testing.T) {
	k := MakeKey(ElemFloat32, OpArith, 1<<20, Layout{4, 8})
	cost := bowl(1e-3, 2, 1, 3)
	for _, c := range []struct {
		name     string
		estimate float64
		episodes int
	}{
		{"accurate", 1e-3 * (1 + 0.08), 1}, // the arm's true cost: no re-exploration
		{"stale", 0.5e-3, 2},               // the table promised half the time: re-explore
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := &Table{Schema: SchemaVersion, Entries: []Entry{{Elem: "float32", Op: "arith", Log2Bytes: 20, Nodes: 4, PPN: 8,
				Variant: "dpml", Leaders: 2, Pipeline: 1, Estimate: c.estimate, State: "frozen"}}}
			tu, err := NewTunerFromTable(Config{SegmentBytes: 256 << 10}, tb)
			if err != nil {
				t.Fatal(err)
			}
			if a := tu.Choose(k); a != (Arm{Variant: plan.DPML, Leaders: 2, Pipeline: 1, Intra: plan.IntraShm}) {
				t.Fatalf("first call of a loaded key: %v, want the table's arm", a)
			}
			res, err := Simulate([]*Tuner{tu}, k, cost, SimOptions{Calls: 600, Noise: 0.02, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			if res.Episodes != c.episodes {
				t.Errorf("episodes = %d, want %d", res.Episodes, c.episodes)
			}
			if c.episodes > 1 && res.Final != res.Best {
				t.Errorf("after re-exploring: %v, best %v", res.Final, res.Best)
			}
		})
	}
}

func TestTableErrors(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"schema", `{"schema": 2, "provenance": {}, "entries": []}`, "schema 2"},
		{"no-schema", `{"provenance": {}, "entries": []}`, "schema 0"},
		{"unknown-field", `{"schema": 1, "provenance": {}, "entries": [], "extra": 1}`, "unknown field"},
		{"variant", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "fast", "leaders": 1, "pipeline": 1, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "variant"},
		{"auto", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float32", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "auto", "leaders": 1, "pipeline": 1, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "variant \"auto\""},
		{"elem", `{"schema": 1, "provenance": {}, "entries": [{"elem": "float16", "op": "arith", "log2_bytes": 3, "nodes": 1, "ppn": 4, "variant": "dpml", "leaders": 1, "pipeline": 1, "estimate_s": 0, "samples": 0, "state": "frozen"}]}`, "element class"},
		{"model", `{"schema": 1, "provenance": {}, "model": {"a": -1}, "entries": []}`, "parameter a"},
	} {
		_, err := ReadTable(strings.NewReader(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// Entries whose arm is not feasible under the tuner's configuration are skipped.
	tb := &Table{Schema: SchemaVersion, Entries: []Entry{
		{Elem: "float32", Op: "arith", Log2Bytes: 20, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 3, Pipeline: 1, State: "frozen"},
		{Elem: "float32", Op: "arith", Log2Bytes: 20, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 4, Pipeline: 1, State: "frozen"},
	}}
	tu := newTuners(t, 1, Config{}, DefaultModel())[0]
	if n, err := tu.LoadTable(tb); err != nil || n != 1 {
		t.Errorf("LoadTable = %d, %v; want 1 loaded", n, err)
	}
}

func TestDefaultTable(t *testing.T) {
	tb := DefaultTable()
	if tb.Schema != SchemaVersion || tb.Model == nil {
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
	tu, err := NewTunerFromTable(Config{SegmentBytes: deviceSegment(32)}, tb)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tu.Infos()); got != len(tb.Entries) {
		t.Errorf("%d of %d default entries loaded", got, len(tb.Entries))
	}
	// DefaultTable returns copies.
	tb.Entries = nil
	if len(DefaultTable().Entries) == 0 {
		t.Error("DefaultTable shares its entries")
	}
}

// TestStartEntriesExplore: "start" entries (the default table's) begin the
// hill-climb at their arm instead of freezing it.
func TestStartEntriesExplore(t *testing.T) {
	tu, err := NewTunerFromTable(Config{SegmentBytes: deviceSegment(32)}, DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range DefaultTable().Entries {
		k, _ := en.Key()
		a, _ := en.Arm()
		in, ok := tu.Info(k)
		if !ok || in.State != Exploring || in.Arm != a {
			t.Fatalf("entry %+v: loaded as %+v (found %v), want exploring at its arm", en, in, ok)
		}
	}
}
