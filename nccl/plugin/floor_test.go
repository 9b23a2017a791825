package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
)

// The channel floor's tests: floortest (testdata/floortest.c) creates
// communicators on the fake NCCL built as libnccl.so (with the fake CUDA
// runtime as libcudart.so), once with libdpml-nccl-tuner.so preloaded and
// once without, and prints what each creation received (the fake records
// the config) and set up. The fake NVML describes the machine: H200s over
// NVLink, whose built-in data has a floor of 32; the fake NCCL's own
// channel count is 16.

var fakes struct {
	once                 sync.Once
	dir, floortest, nvml string
	err                  error
}

// buildFakes builds libcudart.so, libnccl.so, the fake NVML and floortest
// once per test binary.
func buildFakes(t *testing.T) (floortest, nvml, dir string) {
	t.Helper()
	buildPlugin(t)
	fakes.once.Do(func() {
		fakes.dir = filepath.Join(built.dir, "fakes")
		if fakes.err = os.MkdirAll(fakes.dir, 0o755); fakes.err != nil {
			return
		}
		d := fakes.dir
		for _, c := range [][]string{
			{"-shared", "-fPIC", "-Itestdata/fake", "-o", d + "/libcudart.so", "testdata/fake/fakecuda.c"},
			{"-shared", "-fPIC", "-Itestdata/fake", "-o", d + "/libnccl.so", "testdata/fake/fakenccl.c", "-L" + d, "-lcudart", "-ldl"},
			{"-shared", "-fPIC", "-o", d + "/libfakenvml.so", "testdata/fake/fakenvml.c"},
			{"-Itestdata/fake", "-o", d + "/floortest", "testdata/floortest.c", "-L" + d, "-Wl,-rpath," + d, "-lnccl", "-lcudart"},
		} {
			out, err := exec.Command("gcc", append([]string{"-O2", "-Wall", "-std=gnu11"}, c...)...).CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) > 0 {
				fakes.err = fmt.Errorf("gcc %v: %v\n%s", c, err, out)
				return
			}
		}
		fakes.floortest, fakes.nvml = d+"/floortest", d+"/libfakenvml.so"
	})
	if fakes.err != nil {
		t.Fatal(fakes.err)
	}
	return fakes.floortest, fakes.nvml, fakes.dir
}

// commInfo is one "COMM i ..." or "CHILD i ..." line of floortest.
type commInfo struct {
	Null                                                 bool
	Given, Size, Version, Blocking, Min, Max, Chans, Dev int64
}

type floorResult struct {
	RC        int
	Comms     []commInfo
	Children  []commInfo
	Unchanged bool
	Device    int
	Stderr    string
}

const undef = -2147483648

func parseFloortest(t *testing.T, stdout string) floorResult {
	t.Helper()
	var r floorResult
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "RC":
			fmt.Sscan(f[1], &r.RC)
		case len(f) == 2 && f[0] == "DEVICE":
			fmt.Sscan(f[1], &r.Device)
		case len(f) == 2 && f[0] == "USERCONFIG":
			r.Unchanged = f[1] == "unchanged"
		case len(f) >= 3 && (f[0] == "COMM" || f[0] == "CHILD"):
			var c commInfo
			if f[2] == "null" {
				c.Null = true
			} else if _, err := fmt.Sscanf(strings.Join(f[2:], " "), "given=%d size=%d version=%d blocking=%d min=%d max=%d channels=%d device=%d",
				&c.Given, &c.Size, &c.Version, &c.Blocking, &c.Min, &c.Max, &c.Chans, &c.Dev); err != nil {
				t.Fatalf("floortest line %q: %v", line, err)
			}
			if f[0] == "COMM" {
				r.Comms = append(r.Comms, c)
			} else {
				r.Children = append(r.Children, c)
			}
		}
	}
	return r
}

// runFloortest runs floortest with the plugin preloaded or not, on fake
// H200s over NVLink (FAKE_* and the other settings in env override).
func runFloortest(t *testing.T, preload bool, env []string, args ...string) floorResult {
	t.Helper()
	_, lib := buildPlugin(t)
	exe, nvml, dir := buildFakes(t)
	conf := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(cleanEnv(), "NCCL_TUNER_PLUGIN="+lib, "DPML_NCCL_NVML="+nvml, "FAKE_CUDA_GPUS=4", "FAKE_NVML_GPUS=4",
		"FAKE_NVML_NAME=NVIDIA H200", "NCCL_CONF_FILE="+conf)
	if preload {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+lib)
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("floortest %v (preload %v, %v): %v\n%s%s", args, preload, env, err, stdout.String(), stderr.String())
	}
	r := parseFloortest(t, stdout.String())
	r.Stderr = stderr.String()
	if len(r.Comms) == 0 {
		t.Fatalf("floortest %v: no COMM lines\n%s%s", args, stdout.String(), stderr.String())
	}
	return r
}

func skipOnSystemChannelSettings(t *testing.T) {
	b, err := os.ReadFile("/etc/nccl.conf")
	if err == nil && (strings.Contains(string(b), "CHANNELS") || strings.Contains(string(b), "CTAS") || strings.Contains(string(b), "NRINGS")) {
		t.Skip("/etc/nccl.conf sets NCCL's channels: no floor applies on this machine")
	}
}

// TestFloorApplied: preloaded, every creation entry point creates its
// communicators with minCTAs 32 (the built-in floor) and maxCTAs 64, on a
// copy of the caller's config; without the preload the same calls get
// NCCL's 16 channels.
func TestFloorApplied(t *testing.T) {
	skipOnSystemChannelSettings(t)
	type want struct {
		given, size, version, blocking int64
	}
	fresh := want{1, 40, 21700, undef}  // a config of NCCL 2.17's layout
	caller := want{1, 48, 22803, undef} // the caller's, copied
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		floor int64
		w     want
	}{
		{"ncclCommInitRank", nil, []string{"rank", "2"}, 32, fresh},
		{"ncclCommInitRankConfig", nil, []string{"config", "2"}, 32, caller},
		{"ncclCommInitRankConfig NULL", nil, []string{"config", "2", "nullcfg"}, 32, fresh},
		{"ncclCommInitRankConfig blocking 0", nil, []string{"config", "2", "blocking=0"}, 32, want{1, 48, 22803, 0}},
		{"ncclCommInitRankScalable", nil, []string{"scalable", "2"}, 32, caller},
		{"ncclCommInitAll", nil, []string{"all", "2"}, 32, fresh},
		{"4 GPUs", nil, []string{"rank", "4"}, 32, fresh},
		{"2 of 8 GPUs", []string{"FAKE_CUDA_GPUS=8", "FAKE_NVML_GPUS=8"}, []string{"rank", "2"}, 32, fresh},
		// A config of NCCL 2.16 ends at blocking: NCCL ignores what
		// follows, so the floor goes into a 2.17 config with its blocking.
		{"2.16 config", nil, []string{"config", "2", "version=21605", "min=8", "max=8", "blocking=0"}, 32, want{1, 40, 21700, 0}},
		{"DPML_NCCL_FLOOR=24 on an unknown machine", []string{"DPML_NCCL_FLOOR=24", "FAKE_NVML_NAME=NVIDIA A100-SXM4-80GB"}, []string{"rank", "2"}, 24, fresh},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runFloortest(t, true, c.env, c.args...)
			if r.RC != 0 || !r.Unchanged {
				t.Fatalf("rc %d, caller's config unchanged %v\n%s", r.RC, r.Unchanged, r.Stderr)
			}
			for i, ci := range r.Comms {
				got := want{ci.Given, ci.Size, ci.Version, ci.Blocking}
				if ci.Null || got != c.w || ci.Min != c.floor || ci.Max != 64 || ci.Chans != c.floor {
					t.Errorf("comm %d received %+v, want %+v with minCTAs %d, maxCTAs 64, %d channels", i, ci, c.w, c.floor, c.floor)
				}
			}
			if strings.Contains(r.Stderr, "libdpml-nccl-tuner: INFO") {
				t.Errorf("INFO lines without DPML_VERBOSE:\n%s", r.Stderr)
			}
			if n := runFloortest(t, false, c.env, c.args...); n.RC != 0 || n.Comms[0].Chans != 16 {
				t.Errorf("without the preload: rc %d, %d channels, want 16", n.RC, n.Comms[0].Chans)
			}
		})
	}
}

// TestFloorAll: ncclCommInitAll with a floor creates one communicator per
// listed device, in order, and leaves the current device as it found it.
func TestFloorAll(t *testing.T) {
	skipOnSystemChannelSettings(t)
	for _, preload := range []bool{false, true} {
		r := runFloortest(t, preload, nil, "all", "3", "devs=2,0,3", "dev=1")
		if r.RC != 0 || r.Device != 1 || len(r.Comms) != 3 {
			t.Fatalf("preload %v: rc %d, device after %d (want 1), %d comms", preload, r.RC, r.Device, len(r.Comms))
		}
		for i, dev := range []int64{2, 0, 3} {
			// 3 ranks: no built-in data, so the preload passes through too.
			if c := r.Comms[i]; c.Dev != dev || c.Chans != 16 {
				t.Errorf("preload %v: comm %d on device %d with %d channels, want device %d, 16", preload, i, c.Dev, c.Chans, dev)
			}
		}
	}
	r := runFloortest(t, true, nil, "all", "2", "devs=1,3", "dev=2")
	if r.RC != 0 || r.Device != 2 || r.Comms[0].Dev != 1 || r.Comms[1].Dev != 3 || r.Comms[0].Chans != 32 || r.Comms[1].Min != 32 {
		t.Errorf("floored ncclCommInitAll on devices 1,3: %+v", r)
	}
}

// TestFloorPassThrough: whatever the caller chose, and wherever the data
// has no floor, the preloaded library calls NCCL with the caller's
// arguments: the result is the same as without it.
func TestFloorPassThrough(t *testing.T) {
	skipOnSystemChannelSettings(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nccl.conf")
	if err := os.WriteFile(conf, []byte("# channels\nNCCL_MAX_NCHANNELS=8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		chans int64 // without the preload too
	}{
		{"caller's minCTAs and maxCTAs", nil, []string{"config", "2", "min=8", "max=8"}, 8},
		{"caller's maxCTAs", nil, []string{"config", "2", "max=24"}, 16},
		{"caller's minCTAs", nil, []string{"config", "2", "min=4", "max=64"}, 16},
		{"NCCL_MAX_NCHANNELS", []string{"NCCL_MAX_NCHANNELS=8"}, []string{"rank", "2"}, 8},
		{"NCCL_MIN_NCHANNELS", []string{"NCCL_MIN_NCHANNELS=4"}, []string{"config", "2"}, 16},
		{"NCCL_MAX_NRINGS", []string{"NCCL_MAX_NRINGS=8"}, []string{"rank", "2"}, 8},
		{"NCCL_MIN_CTAS", []string{"NCCL_MIN_CTAS=4"}, []string{"config", "2"}, 16},
		{"NCCL_MAX_CTAS", []string{"NCCL_MAX_CTAS=24"}, []string{"all", "2"}, 16},
		// The first call to NCCL is the creation (no ncclGetUniqueId
		// before it): NCCL has not read its configuration files yet.
		{"NCCL_CONF_FILE", []string{"NCCL_CONF_FILE=" + conf}, []string{"rank", "2", "noid"}, 8},
		{"DPML_NCCL_FLOOR=off", []string{"DPML_NCCL_FLOOR=off"}, []string{"rank", "2"}, 16},
		{"DPML_NCCL_POLICY=off", []string{"DPML_NCCL_POLICY=off"}, []string{"config", "2"}, 16},
		{"A100", []string{"FAKE_NVML_NAME=NVIDIA A100-SXM4-80GB"}, []string{"rank", "2"}, 16},
		{"PCIe", []string{"FAKE_NVML_NVLINK=0"}, []string{"config", "2"}, 16},
		{"NVML fails", []string{"FAKE_NVML_FAIL=1"}, []string{"rank", "2"}, 16},
		{"3 ranks: no data", nil, []string{"rank", "3"}, 16},
		{"4 ranks, 2 GPUs on the host", []string{"FAKE_NVML_GPUS=2"}, []string{"rank", "4"}, 16},
		{"NCCL 2.16", []string{"FAKE_NCCL_VERSION=21605"}, []string{"rank", "2"}, 16},
		{"one device", nil, []string{"all", "1"}, 16},
		{"a split with its own config", nil, []string{"splitcfg", "2", "nullcfg"}, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := runFloortest(t, false, c.env, c.args...)
			p := runFloortest(t, true, c.env, c.args...)
			n.Stderr, p.Stderr = "", ""
			if c.name == "a split with its own config" {
				// The parents are floored (no config); the children, made
				// with a config of their own, are not.
				if len(p.Children) != 2 || p.Children[0].Chans != 16 || p.Children[0].Min != undef || p.Comms[0].Chans != 32 {
					t.Errorf("split: %+v", p)
				}
				return
			}
			if !reflect.DeepEqual(n, p) || n.RC != 0 || n.Comms[0].Chans != c.chans {
				t.Errorf("without the preload %+v\nwith it %+v\nwant the same, %d channels", n, p, c.chans)
			}
		})
	}
	// A NULL-config split's child takes its parent's config (NCCL copies
	// it): the floor of the parent.
	if r := runFloortest(t, true, nil, "split", "2"); len(r.Children) != 2 || r.Children[1].Chans != 32 || r.Children[1].Given != 0 {
		t.Errorf("split with a NULL config: %+v", r)
	}
}

// TestFloorErrors: an NCCL call that fails returns its own error through
// the preloaded library, floor or not; a config NCCL refuses is refused
// the same way; a DPML_NCCL_FLOOR that does not parse applies no floor
// and warns once.
func TestFloorErrors(t *testing.T) {
	skipOnSystemChannelSettings(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		rc   int
	}{
		{"ncclCommInitRank fails", []string{"FAKE_NCCL_FAIL_INIT=2"}, []string{"rank", "2"}, 2},
		{"ncclCommInitRankConfig fails", []string{"FAKE_NCCL_FAIL_INIT=3"}, []string{"config", "2"}, 3},
		{"ncclCommInitRankScalable fails", []string{"FAKE_NCCL_FAIL_INIT=2"}, []string{"scalable", "2"}, 2},
		{"ncclCommInitAll fails", []string{"FAKE_NCCL_FAIL_INIT=2"}, []string{"all", "2"}, 2},
		{"bad magic", nil, []string{"config", "2", "magic=0"}, 4},
		{"duplicate device", nil, []string{"all", "2", "devs=1,1"}, 5},
		{"no such device", nil, []string{"all", "2", "devs=0,9"}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := runFloortest(t, false, c.env, c.args...)
			p := runFloortest(t, true, c.env, c.args...)
			if n.RC != c.rc || p.RC != c.rc {
				t.Fatalf("rc %d without the preload, %d with it; want %d", n.RC, p.RC, c.rc)
			}
			for i := range p.Comms {
				if !p.Comms[i].Null {
					t.Errorf("comm %d set after a failure: %+v", i, p.Comms[i])
				}
			}
		})
	}
	r := runFloortest(t, true, []string{"DPML_NCCL_FLOOR=lots"}, "rank", "2")
	if r.RC != 0 || r.Comms[0].Chans != 16 || strings.Count(r.Stderr, "libdpml-nccl-tuner: WARN ncclCommInitRank: DPML_NCCL_FLOOR") != 1 {
		t.Errorf("DPML_NCCL_FLOOR=lots: rc %d, %d channels; stderr:\n%s", r.RC, r.Comms[0].Chans, r.Stderr)
	}
}

// TestFloorVerbose: DPML_VERBOSE=1 gives one line per creation call,
// with the floor and where it comes from, or why there is none.
func TestFloorVerbose(t *testing.T) {
	skipOnSystemChannelSettings(t)
	r := runFloortest(t, true, []string{"DPML_VERBOSE=1"}, "rank", "2")
	if n := strings.Count(r.Stderr, "libdpml-nccl-tuner: INFO ncclCommInitRank, 2 ranks: minCTAs 32, maxCTAs 64 (built-in data for 2 x NVIDIA H200"); n != 2 {
		t.Errorf("%d floor lines, want 2 (one per rank):\n%s", n, r.Stderr)
	}
	r = runFloortest(t, true, []string{"DPML_VERBOSE=1"}, "all", "2")
	if n := strings.Count(r.Stderr, "libdpml-nccl-tuner: INFO ncclCommInitAll, 2 ranks: minCTAs 32"); n != 1 {
		t.Errorf("%d ncclCommInitAll lines, want 1:\n%s", n, r.Stderr)
	}
	r = runFloortest(t, true, []string{"DPML_VERBOSE=1", "NCCL_MAX_NCHANNELS=8"}, "config", "2")
	if !strings.Contains(r.Stderr, "no channel floor (NCCL_MAX_NCHANNELS is set (the environment))") {
		t.Errorf("pass-through line:\n%s", r.Stderr)
	}
}

// TestFloorTable: with DPML_NCCL_TABLE the floor is the table's largest
// channel answer for the layout.
func TestFloorTable(t *testing.T) {
	skipOnSystemChannelSettings(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json")
	writeTable(t, path, &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: costmodel.Provenance{MPI: "NCCL (fake)"}, Entries: []costmodel.Entry{
		ncclEntry("allreduce", 12, 1, 2, 0, "", ""), ncclEntry("allreduce", 20, 1, 2, 8, "", ""), ncclEntry("allgather", 25, 1, 2, 24, "", ""),
		ncclEntry("allreduce", 25, 1, 4, 48, "", ""),
	}})
	r := runFloortest(t, true, []string{"DPML_NCCL_TABLE=" + path}, "config", "2")
	if r.RC != 0 || r.Comms[0].Min != 24 || r.Comms[0].Chans != 24 {
		t.Errorf("table floor: %+v", r.Comms)
	}
	r = runFloortest(t, true, []string{"DPML_NCCL_TABLE=" + path}, "rank", "4")
	if r.RC != 0 || r.Comms[0].Min != 48 || r.Comms[0].Chans != 48 {
		t.Errorf("table floor, 4 ranks: %+v", r.Comms)
	}
	r = runFloortest(t, true, []string{"DPML_NCCL_TABLE=" + filepath.Join(dir, "missing.json")}, "rank", "2")
	if r.RC != 0 || r.Comms[0].Chans != 16 || !strings.Contains(r.Stderr, "WARN") {
		t.Errorf("missing table: %+v\n%s", r.Comms, r.Stderr)
	}
}
