package leaders

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true},
		{"\n", nil, true},
		{"0", []int{0}, true},
		{"0-3\n", []int{0, 1, 2, 3}, true},
		{"0-1,8,10-11", []int{0, 1, 8, 10, 11}, true},
		{"4,0-1,1", []int{0, 1, 4}, true},
		{"a", nil, false},
		{"3-1", nil, false},
		{"-1", nil, false},
		{"1,", nil, false},
	}
	for _, tc := range tests {
		got, err := ParseCPUList(tc.in)
		if (err == nil) != tc.ok || tc.ok && !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// fakeSysfs builds a sysfs tree: 2 sockets x 1 NUMA node x 2 cores x 2 SMT
// threads (cpu c: socket c/2%2, core c%2, sibling c+4), cpu8 offline without
// topology, and one HCA on NUMA node 1.
func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for c := range 8 {
		d := filepath.Join("devices/system/cpu", "cpu"+itoa(c), "topology")
		write(filepath.Join(d, "physical_package_id"), itoa(c/2%2)+"\n")
		write(filepath.Join(d, "core_id"), itoa(c%2)+"\n")
	}
	write("devices/system/cpu/cpu8/online", "0\n")
	write("devices/system/cpu/online", "0-7\n")
	write("devices/system/cpu/cpufreq/x", "")
	write("devices/system/node/node0/cpulist", "0-1,4-5\n")
	write("devices/system/node/node1/cpulist", "2-3,6-7\n")
	write("devices/system/node/possible", "0-1\n")
	write("class/infiniband/mlx5_0/device/numa_node", "1\n")
	return root
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestReadTopology(t *testing.T) {
	topo, err := ReadTopology(fakeSysfs(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.CPUs) != 9 {
		t.Fatalf("%d CPUs: %+v", len(topo.CPUs), topo.CPUs)
	}
	if got, want := topo.CPU(6), (CPU{ID: 6, Socket: 1, Core: 0, NUMA: 1}); got != want {
		t.Errorf("CPU(6) = %+v, want %+v", got, want)
	}
	if got, want := topo.CPU(8), (CPU{ID: 8, Socket: -1, Core: -1, NUMA: -1}); got != want {
		t.Errorf("offline CPU(8) = %+v, want %+v", got, want)
	}
	if want := []NIC{{"mlx5_0", 1}}; !reflect.DeepEqual(topo.NICs, want) {
		t.Errorf("NICs = %+v, want %+v", topo.NICs, want)
	}

	tests := []struct {
		name string
		cpus []int
		want Place
	}{
		{"one cpu", []int{5}, Place{CPUs: []int{5}, Primary: 5, Core: 1, Socket: 0, NUMA: 0}},
		{"near nic", []int{3}, Place{CPUs: []int{3}, Primary: 3, Core: 1, Socket: 1, NUMA: 1, NearNIC: true}},
		{"core with sibling", []int{6, 2}, Place{CPUs: []int{2, 6}, Primary: 2, Core: 0, Socket: 1, NUMA: 1, NearNIC: true}},
		{"whole socket 0", []int{0, 1, 4, 5, 1}, Place{CPUs: []int{0, 1, 4, 5}, Primary: 0, Core: 0, Socket: 0, NUMA: 0}},
		{"unbound", []int{0, 1, 2, 3, 4, 5, 6, 7}, Place{CPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Primary: 0, Core: 0, Socket: -1, NUMA: -1}},
		{"unknown cpu", []int{8}, Place{CPUs: []int{8}, Primary: 8, Core: -1, Socket: -1, NUMA: -1}},
		{"empty", nil, Place{CPUs: []int{}, Primary: -1, Core: -1, Socket: -1, NUMA: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := topo.Place(tc.cpus)
			if !reflect.DeepEqual(got, tc.want) && !(len(got.CPUs) == 0 && len(tc.want.CPUs) == 0) {
				t.Fatalf("Place(%v) = %+v, want %+v", tc.cpus, got, tc.want)
			}
		})
	}

	// Leaders from the fake node: 8 ranks, rank r bound to cpu r.
	var ps []Place
	for c := range 8 {
		ps = append(ps, topo.Place([]int{c}))
	}
	// Socket 1 (NIC) first; within a socket, cores before SMT siblings.
	if got, want := Order(ps), []int{2, 0, 3, 1, 6, 4, 7, 5}; !slices.Equal(got, want) {
		t.Errorf("Order = %v, want %v", got, want)
	}
	if got := NodeLeader(ps); got != 2 {
		t.Errorf("NodeLeader = %d, want 2 (on the HCA's socket)", got)
	}
}

func TestReadTopologyErrors(t *testing.T) {
	if _, err := ReadTopology(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("missing sysfs: no error")
	}
	root := fakeSysfs(t)
	if err := os.WriteFile(filepath.Join(root, "devices/system/cpu/cpu0/topology/core_id"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTopology(root); err == nil {
		t.Error("malformed core_id: no error")
	}
}

func TestEncodeDecode(t *testing.T) {
	tests := []Place{
		Unknown,
		bound(0, 0, 0, 0),
		{CPUs: []int{3, 7, 64, 65, 1000, EncodedCPUs - 1}, Primary: 3, Core: 1, Socket: 1, NUMA: 3, NearNIC: true},
		{CPUs: []int{0, 1, 2, 3}, Primary: 0, Core: 0, Socket: -1, NUMA: -1},
		{CPUs: []int{5000}, Primary: 5000, Core: 12, Socket: 7, NUMA: 14}, // id beyond the mask
	}
	for _, p := range tests {
		w := p.Encode()
		got, err := DecodePlace(w)
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		want := p
		want.CPUs = nil
		for _, c := range p.CPUs {
			if c < EncodedCPUs {
				want.CPUs = append(want.CPUs, c)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %+v = %+v", want, got)
		}
	}

	var flat []int64
	for _, p := range tests {
		w := p.Encode()
		flat = append(flat, w[:]...)
	}
	ps, err := DecodePlaces(flat)
	if err != nil || len(ps) != len(tests) || ps[2].NUMA != 3 {
		t.Fatalf("DecodePlaces: %v, %v", ps, err)
	}

	var zero [PlaceWords]int64
	if _, err := DecodePlace(zero); err == nil {
		t.Error("zero words decoded")
	}
	bad := bound(1, 1, 0, 0).Encode()
	bad[6] = 0 // count smaller than the mask
	if _, err := DecodePlace(bad); err == nil {
		t.Error("inconsistent words decoded")
	}
	if _, err := DecodePlaces(flat[1:]); err == nil {
		t.Error("ragged words decoded")
	}
	if _, err := DecodePlaces(append(flat, zero[:]...)); err == nil {
		t.Error("DecodePlaces accepted a zero place")
	}
}

func TestLocal(t *testing.T) {
	p, err := Local()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("local place: %v, cpus %v", p, p.CPUs)
	if len(p.CPUs) == 0 || p.Primary != p.CPUs[0] || !slices.IsSorted(p.CPUs) {
		t.Fatalf("bad local place %+v", p)
	}
	if len(p.CPUs) != runtime.NumCPU() {
		t.Errorf("%d CPUs in the affinity set, runtime.NumCPU() = %d", len(p.CPUs), runtime.NumCPU())
	}
	topo, err := ReadTopology("")
	if err != nil {
		t.Skipf("no sysfs here: %v", err)
	}
	t.Logf("topology: %+v", *topo)
	if c := topo.CPU(p.Primary); c.Core != p.Core {
		t.Errorf("Primary's core %d, place says %d", c.Core, p.Core)
	}
	if d, err := DecodePlace(p.Encode()); err != nil || !reflect.DeepEqual(d, p) {
		t.Errorf("local place round trip: %+v, %v", d, err)
	}
	if o := Order([]Place{p, p, p}); !slices.Equal(o, []int{0, 2, 1}) {
		t.Errorf("Order of equal local places = %v", o)
	}
}
