package nccl

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
)

func TestParseDecision(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Decision
		err  string
	}{
		{"8", Decision{8, -1, -1}, ""},
		{"0", Native, ""},
		{"64", Decision{64, -1, -1}, ""},
		{" 16/Ring/SIMPLE ", Decision{16, AlgoRing, ProtoSimple}, ""},
		{"0/tree/ll", Decision{0, AlgoTree, ProtoLL}, ""},
		{"4/collnet_direct/ll128", Decision{4, AlgoCollNetDirect, ProtoLL128}, ""},
		{"65", Native, "channels"},
		{"-1", Native, "channels"},
		{"8/ring", Native, "CHANNELS/ALGO/PROTO"},
		{"8/ring/fast", Native, "unknown protocol"},
		{"8/ding/ll", Native, "unknown algorithm"},
		{"8//ll", Native, "empty"},
		{"x", Native, "channel count"},
		{"", Native, "channel count"},
	} {
		got, err := ParseDecision(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseDecision(%q) = %v, %v; want an error mentioning %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseDecision(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if c.want.Channels > 0 || c.want.Algo >= 0 {
			if back, err := ParseDecision(got.String()); err != nil || back != got {
				t.Errorf("%v does not round-trip through String (%q): %v, %v", got, got.String(), back, err)
			}
		}
	}
}

func TestParseSettings(t *testing.T) {
	for _, c := range []struct {
		policy, table string
		mode          Mode
		fixed         Decision
		bad           bool
	}{
		{"", "", ModeAuto, Native, false},
		{"AUTO", "t.json", ModeAuto, Native, false},
		{"model", "", ModeModel, Native, false},
		{"off", "", ModeOff, Native, false},
		{"12", "", ModeFixed, Decision{12, -1, -1}, false},
		{"8/ring/ll128", "", ModeFixed, Decision{8, AlgoRing, ProtoLL128}, false},
		{"banana", "", ModeOff, Native, true},
		{"99", "", ModeOff, Native, true},
	} {
		s, err := ParseSettings(c.policy, c.table)
		if (err != nil) != c.bad || s.Mode != c.mode || s.Fixed != c.fixed || (!c.bad && s.Table != c.table) {
			t.Errorf("ParseSettings(%q, %q) = %+v, %v; want mode %v fixed %v (error %v)", c.policy, c.table, s, err, c.mode, c.fixed, c.bad)
		}
	}
}

// TestBucket: the plugin's bucket is costmodel's (MakeKey), exact at
// powers of two (the C side's clz must agree; tunertest.c checks it there).
func TestBucket(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 4, 1023, 1024, 1025, 8191, 8192, 1 << 30, 1<<31 - 1, 1 << 40} {
		want := int(costmodel.MakeKey(0, 0, int(n), costmodel.Layout{Nodes: 1, PPN: 1}).SizeLog2)
		if got := Bucket(n); got != want {
			t.Errorf("Bucket(%d) = %d, costmodel says %d", n, got, want)
		}
	}
	if Bucket(math.MaxUint64) != 63 {
		t.Errorf("Bucket(max) = %d", Bucket(math.MaxUint64))
	}
}

func TestPolicyModes(t *testing.T) {
	lay := Layout{Ranks: 2, Nodes: 1}
	off, err := New(Settings{Mode: ModeOff}, lay)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := New(Settings{Mode: ModeFixed, Fixed: Decision{8, AlgoRing, ProtoSimple}}, lay)
	if err != nil {
		t.Fatal(err)
	}
	model, err := New(Settings{Mode: ModeModel, Table: "/nonexistent"}, lay)
	if err != nil {
		t.Fatal(err)
	}
	for c := Coll(0); c < NumColls; c++ {
		for _, n := range []uint64{0, 4096, 1 << 20, 1 << 30, math.MaxUint64} {
			if d := off.Decide(c, n); !d.IsNative() {
				t.Errorf("off: %v %d -> %v", c, n, d)
			}
			if d := fixed.Decide(c, n); d != (Decision{8, AlgoRing, ProtoSimple}) {
				t.Errorf("fixed: %v %d -> %v", c, n, d)
			}
			if d := model.Decide(c, n); d.Channels < 1 || d.Algo != -1 {
				t.Errorf("model: %v %d -> %v: want a channel count only", c, n, d)
			}
		}
	}
	if d := off.Decide(NumColls, 1); d != Native {
		t.Errorf("unknown collective: %v", d)
	}
	if d := fixed.Decide(-1, 1); d != Native {
		t.Errorf("negative collective: %v", d)
	}
	if _, err := New(Settings{Mode: ModeFixed, Fixed: Decision{8, AlgoRing, -1}}, lay); err == nil {
		t.Error("a fixed answer with an algorithm but no protocol was accepted")
	}
}

// TestModelPolicy: the model's leader-count logic mapped to channels:
// few channels for small messages, more for large ones (never fewer as the
// size grows), and the count where each channel's part reaches the
// bandwidth zone.
func TestModelPolicy(t *testing.T) {
	m := DefaultModel()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	lay := Layout{Ranks: 2, Nodes: 1}
	p, err := New(Settings{Mode: ModeModel}, lay)
	if err != nil {
		t.Fatal(err)
	}
	prev := 0
	for b := 0; b < NumBuckets; b++ {
		ch := p.Choice(AllReduce, b).Channels
		if ch < prev {
			t.Errorf("model: 2^%d -> %d channels, fewer than the %d of the bucket below", b, ch, prev)
		}
		prev = ch
	}
	for _, c := range []struct {
		n        uint64
		lo, hi   int
		describe string
	}{
		{4 << 10, 1, 1, "latency-bound: one channel"},
		{64 << 10, 2, 4, "zone A: a few"},
		{1 << 20, 8, 16, "each channel's part still in zone A"},
		{1 << 30, 24, 32, "bandwidth zone: enough to saturate the links"},
	} {
		if got := p.Decide(AllReduce, c.n).Channels; got < c.lo || got > c.hi {
			t.Errorf("model: allreduce of %d bytes -> %d channels, want %d..%d (%s)", c.n, got, c.lo, c.hi, c.describe)
		}
	}
	// One rank: nothing to move, one channel.
	if got, _ := BestChannels(&m, AllReduce, 1<<30, Layout{Ranks: 1, Nodes: 1}, DefaultCandidates); got != 1 {
		t.Errorf("one rank: %d channels", got)
	}
	// Allgather moves half of allreduce's bytes on two ranks: never more channels.
	for b := 10; b < 34; b++ {
		if ag, ar := p.Choice(AllGather, b).Channels, p.Choice(AllReduce, b).Channels; ag > ar {
			t.Errorf("2^%d: allgather %d channels > allreduce %d", b, ag, ar)
		}
	}
	// Predict's terms: zone A divides the bytes among the channels.
	t1 := Predict(&m, AllReduce, 1<<20, lay, 1)
	t8 := Predict(&m, AllReduce, 1<<20, lay, 8)
	if !(t8 < t1/4) {
		t.Errorf("1 MiB: 8 channels %g s, 1 channel %g s: want zone A's near-8x gain", t8, t1)
	}
}

// table writes tb to a temporary file and returns its path.
func writeTableFile(t *testing.T, tb *costmodel.Table) string {
	t.Helper()
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "table.json")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func entry(coll string, log2, nodes, ppn, ch int, algo, proto string) costmodel.Entry {
	en := costmodel.Entry{Elem: "float32", Op: "arith", Log2Bytes: log2, Nodes: nodes, PPN: ppn, Variant: "dpml",
		Leaders: ch, Pipeline: 1, State: "frozen", Coll: coll, Algo: algo, Proto: proto}
	if ch == 0 {
		en.Variant, en.Leaders = "native", 1
	}
	return en
}

func TestPolicyTable(t *testing.T) {
	tb := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: costmodel.Provenance{MPI: "NCCL 2.28.3", Date: "d"}, Entries: []costmodel.Entry{
		entry("allreduce", 12, 1, 2, 0, "", ""),
		entry("allreduce", 13, 1, 2, 2, "", ""),
		entry("allreduce", 16, 1, 2, 4, "", ""),
		entry("allreduce", 20, 1, 2, 16, "ring", "ll128"),
		entry("allreduce", 24, 1, 2, 32, "", ""),
		entry("allgather", 20, 1, 2, 2, "", ""),
		entry("allreduce", 20, 1, 4, 8, "", ""),
		entry("allreduce", 20, 2, 2, 12, "", ""),
		{Elem: "float32", Op: "arith", Log2Bytes: 10, Nodes: 1, PPN: 2, Variant: "dpml", Leaders: 2, Pipeline: 1, State: "frozen"}, // DPML's: ignored
	}}
	path := writeTableFile(t, tb)
	p, err := New(Settings{Mode: ModeAuto, Table: path}, Layout{Ranks: 2, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Source, "allgather,allreduce for layout 1x2") || !strings.Contains(p.Source, "NCCL's default for the rest") {
		t.Errorf("source %q", p.Source)
	}
	for _, c := range []struct {
		coll Coll
		n    uint64
		want Decision
	}{
		{AllReduce, 1 << 10, Native},              // below the smallest entry
		{AllReduce, 8191, Native},                 // 2^12 says native
		{AllReduce, 8192, Decision{2, -1, -1}},    // 2^13
		{AllReduce, 1 << 15, Decision{4, -1, -1}}, // nearer 2^16
		{AllReduce, 1 << 14, Decision{2, -1, -1}}, // nearer 2^13
		{AllReduce, 1 << 20, Decision{16, AlgoRing, ProtoLL128}},
		{AllReduce, 4 << 20, Decision{16, AlgoRing, ProtoLL128}}, // 2^22: a tie, the smaller bucket
		{AllReduce, 8 << 20, Decision{32, -1, -1}},
		{AllReduce, math.MaxUint64, Decision{32, -1, -1}}, // above: the largest's
		{AllGather, 1, Native},
		{AllGather, 1 << 30, Decision{2, -1, -1}},
		{Broadcast, 1 << 20, Native}, // no entries, no model
	} {
		if got := p.Decide(c.coll, c.n); got != c.want {
			t.Errorf("table: %v %d bytes -> %v, want %v", c.coll, c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		lay  Layout
		n    uint64
		want Decision
	}{
		{Layout{4, 1}, 1 << 20, Decision{8, -1, -1}},
		{Layout{4, 2}, 1 << 20, Decision{12, -1, -1}},
		{Layout{5, 2}, 1 << 20, Decision{12, -1, -1}}, // uneven: the floor of ranks per node
		{Layout{8, 1}, 1 << 20, Native},
	} {
		q, err := New(Settings{Mode: ModeAuto, Table: path}, c.lay)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Decide(AllReduce, c.n); got != c.want {
			t.Errorf("layout %v: -> %v, want %v", c.lay, got, c.want)
		}
	}
	// A table with a model answers the uncovered collectives by it.
	m := costmodel.Model{A: 1e-6, Ap: 1, B: 1e-10}
	tb.Model = &m
	q, err := New(Settings{Mode: ModeAuto, Table: writeTableFile(t, tb)}, Layout{Ranks: 2, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Decide(Broadcast, 1<<20); got != (Decision{1, -1, -1}) {
		t.Errorf("table model: broadcast -> %v, want 1 channel", got)
	}
	if got := q.Decide(AllReduce, 1<<20); got != (Decision{16, AlgoRing, ProtoLL128}) {
		t.Errorf("table model: allreduce -> %v, want the entry", got)
	}
}

// TestPolicyTableErrors: every error answers NCCL's default for every call.
func TestPolicyTableErrors(t *testing.T) {
	bad := func(mut func(*costmodel.Entry)) *costmodel.Table {
		en := entry("allreduce", 20, 1, 2, 16, "", "")
		mut(&en)
		return &costmodel.Table{Schema: costmodel.SchemaVersion, Entries: []costmodel.Entry{entry("allreduce", 16, 1, 2, 4, "", ""), en}}
	}
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{"), 0o644)
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, bytes.Repeat([]byte(" "), maxTableBytes+1), 0o644)
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.json"), "no such file"},
		{"directory", dir, "regular file"},
		{"garbage", garbage, "reading tuning table"},
		{"too large", big, "16 MiB"},
		{"collective", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Coll = "alltoall" })), "unknown collective"},
		{"pipelined", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Variant = "pipelined" })), "variant"},
		{"zero channels", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Leaders = 0 })), "channels"},
		{"65 channels", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Leaders = 65 })), "channels"},
		{"algo alone", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Algo = "ring" })), "together"},
		{"proto name", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Algo, e.Proto = "ring", "fast" })), "protocol"},
		{"conflict", writeTableFile(t, bad(func(e *costmodel.Entry) { e.Log2Bytes, e.Elem = 16, "float64" })), "disagree"},
	} {
		p, err := New(Settings{Mode: ModeAuto, Table: c.path}, Layout{Ranks: 2, Nodes: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
		if p == nil {
			t.Fatalf("%s: no policy", c.name)
		}
		for coll := Coll(0); coll < NumColls; coll++ {
			for b := 0; b < NumBuckets; b++ {
				if d := p.Choice(coll, b); !d.IsNative() {
					t.Fatalf("%s: %v 2^%d -> %v after an error, want native", c.name, coll, b, d)
				}
			}
		}
	}
	// Two entries of a bucket that agree are fine.
	same := &costmodel.Table{Schema: costmodel.SchemaVersion, Entries: []costmodel.Entry{entry("allreduce", 20, 1, 2, 16, "", ""), entry("allreduce", 20, 1, 2, 16, "", "")}}
	same.Entries[1].Elem = "float64"
	if _, err := New(Settings{Mode: ModeAuto, Table: writeTableFile(t, same)}, Layout{Ranks: 2, Nodes: 1}); err != nil {
		t.Errorf("agreeing entries: %v", err)
	}
}

// TestTableCache: a table is read again when the file changes.
func TestTableCache(t *testing.T) {
	tb := &costmodel.Table{Schema: costmodel.SchemaVersion, Entries: []costmodel.Entry{entry("allreduce", 20, 1, 2, 16, "", "")}}
	path := writeTableFile(t, tb)
	p1, _ := New(Settings{Mode: ModeAuto, Table: path}, Layout{Ranks: 2, Nodes: 1})
	tb.Entries[0].Leaders = 8
	tb.Entries = append(tb.Entries, entry("allreduce", 21, 1, 2, 8, "", "")) // a different size, whatever the clock's resolution
	var b bytes.Buffer
	tb.Write(&b)
	os.WriteFile(path, b.Bytes(), 0o644)
	p2, _ := New(Settings{Mode: ModeAuto, Table: path}, Layout{Ranks: 2, Nodes: 1})
	if p1.Decide(AllReduce, 1<<20).Channels != 16 || p2.Decide(AllReduce, 1<<20).Channels != 8 {
		t.Errorf("cached table not refreshed: %v then %v", p1.Decide(AllReduce, 1<<20), p2.Decide(AllReduce, 1<<20))
	}
}
