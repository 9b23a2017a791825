package leaders

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
)

// DefaultSysfs is where ReadTopology looks when given "".
const DefaultSysfs = "/sys"

// CPU is one logical CPU (hardware thread) of the node. Unknown ids are -1.
type CPU struct {
	ID     int // logical CPU number, as in sched_getaffinity and cpuN
	Socket int // topology/physical_package_id
	Core   int // topology/core_id: unique within its socket, shared by SMT siblings
	NUMA   int // the N of the nodeN whose cpulist contains this CPU
}

// NIC is one RDMA device (an HCA: /sys/class/infiniband/<Name>).
type NIC struct {
	Name string // e.g. "mlx5_0"
	NUMA int    // device/numa_node; -1 when the platform does not say
}

// Topology describes this node as Linux sysfs shows it: every logical CPU
// with its socket, core and NUMA node, and the RDMA devices with their NUMA
// node. It is the machine side of placement; the rank side is a Place per
// local rank (its CPU set mapped through a Topology), allgathered over the
// node communicator. Order and friends work on the []Place alone.
type Topology struct {
	CPUs []CPU // ascending ID
	NICs []NIC // ascending Name; empty when there is no RDMA device
}

// ReadTopology reads the topology under sysfs ("" = DefaultSysfs). Missing
// per-CPU or NUMA information is recorded as -1, not an error (containers,
// non-NUMA kernels and offline CPUs lack some files); the error is only for
// a sysfs without a readable devices/system/cpu directory. Malformed
// contents are errors.
func ReadTopology(sysfs string) (*Topology, error) {
	if sysfs == "" {
		sysfs = DefaultSysfs
	}
	cpuDir := filepath.Join(sysfs, "devices", "system", "cpu")
	entries, err := os.ReadDir(cpuDir)
	if err != nil {
		return nil, fmt.Errorf("leaders: read topology: %w", err)
	}
	t := &Topology{}
	for _, e := range entries {
		id, ok := numbered(e.Name(), "cpu")
		if !ok {
			continue
		}
		c := CPU{ID: id, Socket: -1, Core: -1, NUMA: -1}
		c.Socket, err = readIntFile(filepath.Join(cpuDir, e.Name(), "topology", "physical_package_id"))
		if err != nil {
			return nil, err
		}
		c.Core, err = readIntFile(filepath.Join(cpuDir, e.Name(), "topology", "core_id"))
		if err != nil {
			return nil, err
		}
		t.CPUs = append(t.CPUs, c)
	}
	sort.Slice(t.CPUs, func(i, j int) bool { return t.CPUs[i].ID < t.CPUs[j].ID })

	nodeDir := filepath.Join(sysfs, "devices", "system", "node")
	if entries, err := os.ReadDir(nodeDir); err == nil { // no NUMA info: all -1
		for _, e := range entries {
			node, ok := numbered(e.Name(), "node")
			if !ok {
				continue
			}
			b, err := os.ReadFile(filepath.Join(nodeDir, e.Name(), "cpulist"))
			if err != nil {
				continue
			}
			cpus, err := ParseCPUList(string(b))
			if err != nil {
				return nil, fmt.Errorf("leaders: %s/%s/cpulist: %w", nodeDir, e.Name(), err)
			}
			for _, id := range cpus {
				if i, ok := t.index(id); ok {
					t.CPUs[i].NUMA = node
				}
			}
		}
	}

	ibDir := filepath.Join(sysfs, "class", "infiniband")
	if entries, err := os.ReadDir(ibDir); err == nil {
		for _, e := range entries {
			n, err := readIntFile(filepath.Join(ibDir, e.Name(), "device", "numa_node"))
			if err != nil {
				return nil, err
			}
			t.NICs = append(t.NICs, NIC{Name: e.Name(), NUMA: n})
		}
		sort.Slice(t.NICs, func(i, j int) bool { return t.NICs[i].Name < t.NICs[j].Name })
	}
	return t, nil
}

// numbered parses names like "cpu12" (prefix "cpu") into 12.
func numbered(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// readIntFile reads a one-integer sysfs file; a missing or unreadable file
// is -1 (unknown), a malformed one an error.
func readIntFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1, fmt.Errorf("leaders: %s: %w", path, err)
	}
	if n < 0 {
		n = -1
	}
	return n, nil
}

// ParseCPUList parses the kernel's CPU list format ("0-3,8,10-11", possibly
// empty or newline-terminated) into ascending, distinct CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	var out []int
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
			if b-a > 1<<20 {
				return nil, errors.New("CPU list range too large")
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// index finds CPU id in t.CPUs.
func (t *Topology) index(id int) (int, bool) {
	i := sort.Search(len(t.CPUs), func(i int) bool { return t.CPUs[i].ID >= id })
	return i, i < len(t.CPUs) && t.CPUs[i].ID == id
}

// CPU returns the description of logical CPU id; unknown CPUs have -1 ids.
func (t *Topology) CPU(id int) CPU {
	if i, ok := t.index(id); ok {
		return t.CPUs[i]
	}
	return CPU{ID: id, Socket: -1, Core: -1, NUMA: -1}
}

// Place maps a CPU set (a rank's affinity) to its Place:
//
//   - CPUs: the set, ascending and without duplicates;
//   - Primary: the lowest CPU of the set (-1 if the set is empty);
//   - Core: the core id of Primary;
//   - Socket, NUMA: the socket and NUMA node shared by every CPU of the set;
//     -1 if any CPU's is unknown or the set spans several (an unbound rank
//     is on no particular socket);
//   - NearNIC: an RDMA device sits on the place's NUMA node or, when NUMA is
//     -1 but Socket is known, on a NUMA node of the place's socket.
func (t *Topology) Place(cpus []int) Place {
	set := slices.Clone(cpus)
	slices.Sort(set)
	set = slices.Compact(set)
	p := Place{CPUs: set, Primary: -1, Core: -1, Socket: -1, NUMA: -1}
	if len(set) == 0 {
		return p
	}
	p.Primary = set[0]
	first := t.CPU(set[0])
	p.Core, p.Socket, p.NUMA = first.Core, first.Socket, first.NUMA
	for _, id := range set[1:] {
		c := t.CPU(id)
		if c.Socket != p.Socket {
			p.Socket = -1
		}
		if c.NUMA != p.NUMA {
			p.NUMA = -1
		}
	}
	for _, nic := range t.NICs {
		switch {
		case nic.NUMA < 0:
		case p.NUMA >= 0 && nic.NUMA == p.NUMA:
			p.NearNIC = true
		case p.NUMA < 0 && p.Socket >= 0 && t.nodeSocket(nic.NUMA) == p.Socket:
			p.NearNIC = true
		}
	}
	return p
}

// nodeSocket is the socket of NUMA node n's CPUs (-1 if none or mixed).
func (t *Topology) nodeSocket(n int) int {
	s, seen := -1, false
	for _, c := range t.CPUs {
		if c.NUMA != n {
			continue
		}
		if seen && c.Socket != s {
			return -1
		}
		s, seen = c.Socket, true
	}
	return s
}

// OnlineCPUs counts the CPUs online on this host (sysfs "online", e.g.
// "0-31"), which runtime.NumCPU does not when the process is bound to a
// subset of them (an MPI rank bound to a core, an emulated node). 0 when
// unknown.
func OnlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return 0
	}
	return len(cpus)
}

// LLCPath is where Linux describes cpu0's last-level (level-3) cache.
const LLCPath = "/sys/devices/system/cpu/cpu0/cache/index3/size"

// LLCBytes reads the last-level cache size of cpu0 from sysfs (0 and an
// error when it is not there, e.g. in some containers).
func LLCBytes() (int, error) {
	b, err := os.ReadFile(LLCPath)
	if err != nil {
		return 0, fmt.Errorf("last-level cache size: %w", err)
	}
	return ParseCacheSize(string(b))
}

// ParseCacheSize parses a sysfs cache size such as "32768K", "1M" or "512".
func ParseCacheSize(s string) (int, error) {
	n, err := config.ParseBytes(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("cache size %q: not a positive byte count", strings.TrimSpace(s))
	}
	return int(n), nil
}
