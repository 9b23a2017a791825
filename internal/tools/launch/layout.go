// Package launch is the library behind cmd/dpmlrun: it turns a layout of
// fake nodes into an Open MPI mpirun or an MPICH (Hydra) mpiexec command
// line, and it implements the launch agent that starts each fake node's
// daemon (Open MPI's orted, Hydra's hydra_pmi_proxy) in its own UTS
// namespace (named after the fake host) pinned to the fake node's cores.
// Which MPI: -mpi, else the ABI the program and the preloaded libraries
// link against (ResolveFlavor), else the one dpmlrun was built for.
//
// The pure parts (layout parsing, core assignment, the mpirun argv, the
// agent's argument parsing) are separate functions so they can be table
// tested; Run and AgentMain do the I/O.
package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// ParsePPN parses the ranks-per-node argument. A single number P means P
// ranks on each of nodes fake nodes (nodes must then be at least 1); a list
// "3,2" gives each node its own count, and nodes must be 0 (take the length
// of the list) or equal to the length of the list.
func ParsePPN(nodes int, s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("-ppn is empty")
	}
	if nodes < 0 || nodes > MaxNodes {
		return nil, fmt.Errorf("-nodes %d: must be 1 to %d", nodes, MaxNodes)
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxNodes {
		return nil, fmt.Errorf("-ppn %q: more than %d nodes", trim(s), MaxNodes)
	}
	vals := make([]int, len(parts))
	total := 0
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 || v > MaxRanks {
			return nil, fmt.Errorf("-ppn %q: %q is not an integer from 1 to %d", trim(s), trim(p), MaxRanks)
		}
		vals[i] = v
		total += v
	}
	if len(vals) == 1 && nodes > 0 {
		total = vals[0] * nodes
	}
	if total > MaxRanks {
		return nil, fmt.Errorf("-ppn %q: %d ranks in all, more than %d", trim(s), total, MaxRanks)
	}
	if len(vals) == 1 {
		if nodes == 0 {
			nodes = 1
		}
		out := make([]int, nodes)
		for i := range out {
			out[i] = vals[0]
		}
		return out, nil
	}
	if nodes != 0 && nodes != len(vals) {
		return nil, fmt.Errorf("-ppn %q lists %d nodes but -nodes is %d", s, len(vals), nodes)
	}
	return vals, nil
}

// Bounds of a layout (so that no command line makes dpmlrun allocate or
// loop without end): nodes, ranks in all, CPU numbers.
const (
	MaxNodes = 4096
	MaxRanks = 1 << 16
	MaxCPU   = 1<<16 - 1
)

// trim shortens a value quoted in an error message.
func trim(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// FormatPPN is the inverse of ParsePPN: "2" when all nodes have the same
// count, else the list "3,2". It is the value of DPML_RUN_PPN.
func FormatPPN(ppn []int) string {
	if len(ppn) == 0 {
		return ""
	}
	even := true
	for _, p := range ppn {
		if p != ppn[0] {
			even = false
		}
	}
	if even {
		return strconv.Itoa(ppn[0])
	}
	s := make([]string, len(ppn))
	for i, p := range ppn {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// Sum returns the total number of ranks of a layout.
func Sum(ppn []int) int {
	n := 0
	for _, p := range ppn {
		n += p
	}
	return n
}

// ParseCPUList parses a Linux CPU list such as "0-3,8,10-11": sorted,
// without duplicates. CPU numbers above MaxCPU and lists of more than
// 4096 parts are errors.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty cpu list")
	}
	parts := strings.Split(s, ",")
	if len(parts) > 4096 {
		return nil, fmt.Errorf("bad cpu list %q: more than 4096 parts", trim(s))
	}
	var set [MaxCPU + 1]bool
	n := 0
	for _, part := range parts {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > MaxCPU {
			return nil, fmt.Errorf("bad cpu list %q", trim(s))
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a || b > MaxCPU {
				return nil, fmt.Errorf("bad cpu list %q", trim(s))
			}
		}
		for c := a; c <= b; c++ {
			if !set[c] {
				set[c] = true
				n++
			}
		}
	}
	out := make([]int, 0, n)
	for c, ok := range set {
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// FormatCPUList formats CPUs as a compact list for taskset -c ("0-3,8").
// The order is kept (a wrapped assignment like 3,0 stays as given).
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}

// HostCPUs returns the CPUs this process may run on (Cpus_allowed_list of
// /proc/self/status), or 0..NumCPU-1 when that cannot be read.
func HostCPUs() []int {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
				if cpus, err := ParseCPUList(v); err == nil && len(cpus) > 0 {
					return cpus
				}
			}
		}
	}
	n := runtime.NumCPU()
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// AssignCPUs gives each fake node its cores. coresPerNode 0 means
// max(1, len(host)/nodes). Node i gets the coresPerNode CPUs starting at
// position i*coresPerNode of host, wrapping around when the host has too few
// (coresPerNode is capped at len(host)). oversubscribed reports whether some
// node has more ranks than cores or the nodes together use more cores than
// the host has; dpmlrun then asks Open MPI to yield when idle.
func AssignCPUs(host []int, ppn []int, coresPerNode int) (cpus [][]int, perNode int, oversubscribed bool, err error) {
	if len(host) == 0 {
		return nil, 0, false, fmt.Errorf("no CPUs available")
	}
	if coresPerNode < 0 {
		return nil, 0, false, fmt.Errorf("-cores-per-node %d: must be positive", coresPerNode)
	}
	nodes := len(ppn)
	c := coresPerNode
	if c == 0 {
		c = max(1, len(host)/max(1, nodes))
	}
	if c > len(host) {
		c = len(host)
		oversubscribed = true
	}
	if nodes*c > len(host) {
		oversubscribed = true
	}
	cpus = make([][]int, nodes)
	for i := range cpus {
		cpus[i] = make([]int, c)
		for j := range c {
			cpus[i][j] = host[(i*c+j)%len(host)]
		}
		if ppn[i] > c {
			oversubscribed = true
		}
	}
	return cpus, c, oversubscribed, nil
}

// NodeNames returns the fake host names prefix1 .. prefixN.
func NodeNames(prefix string, nodes int) []string {
	names := make([]string, nodes)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i+1)
	}
	return names
}

// EncodeCPUMap encodes the per-node CPU lists for the agent (environment
// variable EnvCPUMap): "node1=0-1;node2=2-3".
func EncodeCPUMap(hosts []string, cpus [][]int) string {
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		parts[i] = h + "=" + FormatCPUList(cpus[i])
	}
	return strings.Join(parts, ";")
}

// LookupCPUMap finds host's CPU list in an EncodeCPUMap string.
func LookupCPUMap(m, host string) (string, bool) {
	for _, part := range strings.Split(m, ";") {
		h, cpus, ok := strings.Cut(part, "=")
		if ok && h == host {
			return cpus, true
		}
	}
	return "", false
}
