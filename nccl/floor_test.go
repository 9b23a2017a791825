package nccl

import (
	"math"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
)

func TestParseFloorSetting(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FloorSetting
		err  bool
	}{
		{"", FloorSetting{Mode: FloorAuto}, false},
		{" AUTO ", FloorSetting{Mode: FloorAuto}, false},
		{"off", FloorSetting{Mode: FloorOff}, false},
		{"32", FloorSetting{Mode: FloorFixed, Channels: 32}, false},
		{"64", FloorSetting{Mode: FloorFixed, Channels: 64}, false},
		{"0", FloorSetting{Mode: FloorOff}, true},
		{"65", FloorSetting{Mode: FloorOff}, true},
		{"lots", FloorSetting{Mode: FloorOff}, true},
	} {
		got, err := ParseFloorSetting(c.in)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseFloorSetting(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// TestDecideFloor: the floor follows the plugin's data for the machine
// (the seeded built-in data has 32 for 2 and 4 H200 over NVLink), only
// under the auto policy, only for communicators that fit on this host,
// and DPML_NCCL_FLOOR overrides it.
func TestDecideFloor(t *testing.T) {
	h200 := Settings{Mode: ModeAuto, GPU: "NVIDIA H200", Link: "nvlink"}
	auto := FloorSetting{Mode: FloorAuto}
	table := func(entries ...costmodel.Entry) Settings {
		tb := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: costmodel.Provenance{MPI: "NCCL 2.28.3"}, Entries: entries}
		return Settings{Mode: ModeAuto, Table: writeTableFile(t, tb)}
	}
	for _, c := range []struct {
		name string
		q    FloorQuery
		want int
		src  string
	}{
		{"2 x H200", FloorQuery{Ranks: 2, HostGPUs: 2, Settings: h200, Floor: auto}, 32, "built-in data for 2 x NVIDIA H200"},
		{"4 x H200", FloorQuery{Ranks: 4, HostGPUs: 4, Settings: h200, Floor: auto}, 32, "built-in data for 4 x NVIDIA H200"},
		{"2 of 4 H200", FloorQuery{Ranks: 2, HostGPUs: 4, Settings: h200, Floor: auto}, 32, "2 x NVIDIA H200"},
		{"3 x H200: no data", FloorQuery{Ranks: 3, HostGPUs: 4, Settings: h200, Floor: auto}, 0, "no built-in data for 3 x"},
		{"more ranks than GPUs", FloorQuery{Ranks: 4, HostGPUs: 2, Settings: h200, Floor: auto}, 0, "may span nodes"},
		{"host unknown", FloorQuery{Ranks: 2, Settings: h200, Floor: auto}, 0, "unknown"},
		{"one rank", FloorQuery{Ranks: 1, HostGPUs: 2, Settings: h200, Floor: auto}, 0, "1 rank"},
		{"2 x H100", FloorQuery{Ranks: 2, HostGPUs: 2, Settings: Settings{Mode: ModeAuto, GPU: "NVIDIA H100 80GB HBM3", Link: "nvlink"}, Floor: auto}, 32, "built-in data for 2 x NVIDIA H100 80GB HBM3"},
		{"4 x H100", FloorQuery{Ranks: 4, HostGPUs: 4, Settings: Settings{Mode: ModeAuto, GPU: "NVIDIA H100 80GB HBM3", Link: "nvlink"}, Floor: auto}, 32, "built-in data for 4 x NVIDIA H100 80GB HBM3"},
		{"A100", FloorQuery{Ranks: 2, HostGPUs: 2, Settings: Settings{Mode: ModeAuto, GPU: "NVIDIA A100-SXM4-80GB", Link: "nvlink"}, Floor: auto}, 0, "no built-in data"},
		{"PCIe", FloorQuery{Ranks: 2, HostGPUs: 2, Settings: Settings{Mode: ModeAuto, GPU: "NVIDIA H200", Link: "pcie"}, Floor: auto}, 0, "no built-in data"},
		{"policy off", FloorQuery{Ranks: 2, HostGPUs: 2, Settings: Settings{Mode: ModeOff, GPU: "NVIDIA H200", Link: "nvlink"}, Floor: auto}, 0, "DPML_NCCL_POLICY=off"},
		{"floor off", FloorQuery{Ranks: 2, HostGPUs: 2, Settings: h200, Floor: FloorSetting{Mode: FloorOff}}, 0, "DPML_NCCL_FLOOR=off"},
		{"fixed on an unknown machine", FloorQuery{Ranks: 16, Floor: FloorSetting{Mode: FloorFixed, Channels: 24}}, 24, "DPML_NCCL_FLOOR=24"},
		{"table", FloorQuery{Ranks: 2, HostGPUs: 8, Floor: auto, Settings: table(
			entry("allreduce", 12, 1, 2, 0, "", ""), entry("allreduce", 21, 1, 2, 16, "", ""), entry("allgather", 25, 1, 2, 24, "", ""),
			entry("allreduce", 25, 1, 4, 48, "", ""), entry("allreduce", 25, 2, 1, 64, "", ""))}, 24, "largest channel answer for layout 1x2"},
		{"table without counts", FloorQuery{Ranks: 2, HostGPUs: 8, Floor: auto, Settings: table(entry("allreduce", 12, 1, 2, 0, "", ""))}, 0, "answers no channel count"},
	} {
		d, err := DecideFloor(c.q)
		if err != nil || d.Channels != c.want || !strings.Contains(d.Source, c.src) {
			t.Errorf("%s: %+v, %v; want %d channels, source with %q", c.name, d, err, c.want, c.src)
		}
	}
	if d, err := DecideFloor(FloorQuery{Ranks: 2, HostGPUs: 2, Floor: auto, Settings: Settings{Mode: ModeAuto, Table: "/nonexistent/t.json"}}); err == nil || d.Channels != 0 {
		t.Errorf("unreadable table: %+v, %v; want no floor and an error", d, err)
	}
	if d, err := DecideFloor(FloorQuery{Ranks: 2, Floor: FloorSetting{Mode: FloorFixed, Channels: 65}}); err == nil || d.Channels != 0 {
		t.Errorf("floor 65: %+v, %v", d, err)
	}
}

// TestFitFloor: the floor is the forced count that does best in the
// largest buckets of every collective, never slower than the default in
// their medians and at least the margin faster in one.
func TestFitFloor(t *testing.T) {
	pick := func(coll string, log2 int, sp map[int]float64) ForcedPick {
		return ForcedPick{Coll: coll, Log2: log2, Pairs: 3, Speedups: sp}
	}
	var picks []ForcedPick
	for _, c := range []string{"allreduce", "allgather"} {
		// A small bucket where 1 channel wins by far: not a large size.
		picks = append(picks, pick(c, 12, map[int]float64{1: 1.5, 16: 0.9, 32: 0.8}))
		for b := 27; b <= 30; b++ {
			picks = append(picks, pick(c, b, map[int]float64{1: 0.3, 16: 1.0, 24: 1.02, 32: 1.05}))
		}
	}
	f, why := FitFloor(picks, FitOptions{})
	if f == nil || f.Channels != 32 || !strings.Contains(f.Evidence, "2^28..2^30") || !strings.Contains(f.Evidence, "1.050 to 1.050") {
		t.Fatalf("floor %+v (%s), want 32 from 2^28..2^30", f, why)
	}
	// 32 slower than the default in one large bucket: 24 takes its place.
	picks[len(picks)-1].Speedups = map[int]float64{1: 0.3, 16: 1.0, 24: 1.04, 32: 0.99}
	if f, why := FitFloor(picks, FitOptions{}); f == nil || f.Channels != 24 {
		t.Errorf("32 slower once: floor %+v (%s), want 24", f, why)
	}
	// Nothing at least 3% faster anywhere: no floor.
	for i := range picks {
		if picks[i].Log2 >= 27 {
			picks[i].Speedups = map[int]float64{16: 1.0, 32: 1.02}
		}
	}
	if f, why := FitFloor(picks, FitOptions{}); f != nil || !strings.Contains(why, "32 at most 1.020") {
		t.Errorf("no headroom: floor %+v (%s), want none", f, why)
	}
	if f, _ := FitFloor(picks, FitOptions{Improve: 0.01}); f == nil || f.Channels != 32 {
		t.Errorf("margin 1%%: floor %+v, want 32", f)
	}
	if f, why := FitFloor(nil, FitOptions{}); f != nil || why == "" {
		t.Errorf("no picks: %+v %q", f, why)
	}
}

// TestFitForcedSpeedups: FitForced keeps every forced count's median
// speedup, the input of FitFloor.
func TestFitForcedSpeedups(t *testing.T) {
	var sweeps []*Sweep
	for _, d := range []string{"110", "100", "105"} {
		sweeps = append(sweeps, readSweep(t, forcedCSV("allreduce 1073741824 nccl@dflt "+d, "allreduce 1073741824 nccl@32 100",
			"allreduce 1073741824 nccl@16 "+d)))
	}
	picks, _, err := FitForced(sweeps, FitOptions{})
	if err != nil || len(picks) != 1 {
		t.Fatalf("%+v %v", picks, err)
	}
	if s := picks[0].Speedups; math.Abs(s[32]-1.05) > 1e-9 || s[16] != 1 || len(s) != 2 {
		t.Errorf("speedups %v, want 32: 1.05, 16: 1", s)
	}
	if f, _ := FitFloor(picks, FitOptions{}); f == nil || f.Channels != 32 {
		t.Errorf("floor %+v", f)
	}
}
