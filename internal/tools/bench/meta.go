package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/leaders"
)

// GitCommit is the commit dpmlbench was built from: override (set with
// -ldflags -X by a Makefile), else the vcs.revision stamped by the Go
// toolchain, else `git rev-parse HEAD` in the working directory; dirty
// reports uncommitted changes when known.
func GitCommit(override string) (commit string, dirty bool) {
	if override != "" {
		return override, false
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if commit != "" {
			return commit, dirty
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	commit = strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		dirty = len(strings.TrimSpace(string(st))) > 0
	}
	return commit, dirty
}

// EnvPrefixes are the environment variables recorded in the metadata.
var EnvPrefixes = []string{"DPML_", "OMPI_MCA_", "MPICH_", "UCX_"}

// Env returns the environment variables with one of the prefixes.
func Env(prefixes []string) map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// DistinctHosts returns the distinct names in order of first appearance.
func DistinctHosts(rankHosts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range rankHosts {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// HostCounts returns the number of ranks per distinct host, sorted by host.
func HostCounts(rankHosts []string) map[string]int {
	m := map[string]int{}
	for _, h := range rankHosts {
		m[h]++
	}
	return m
}

// HostCPUs counts the CPUs online on this host (leaders.OnlineCPUs).
func HostCPUs() int { return leaders.OnlineCPUs() }

// CountCPUList counts the CPUs of a Linux CPU list such as "0-3,8,10-11".
func CountCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// Machine describes rank 0's host for titles and tables: the CPU model
// from /proc/cpuinfo and the CPUs online ("AMD EPYC 9654 96-Core
// Processor, 32 CPUs"); "" when the model is unknown. dpmlbench-c writes
// the same text.
func Machine() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return machineFromCPUInfo(string(b), HostCPUs())
}

func machineFromCPUInfo(cpuinfo string, cpus int) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			model := strings.Join(strings.Fields(v), " ")
			if model == "" {
				return ""
			}
			return fmt.Sprintf("%s, %d CPUs", model, cpus)
		}
	}
	return ""
}
