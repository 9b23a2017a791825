package config

import (
	"fmt"
	"sort"
	"strings"
)

// Prefix starts the name of every variable in the table.
const Prefix = "DPML_"

// UnknownName is a variable of the environment that looks like a DPML
// setting but is not one: a DPML_ name the table does not declare, or a
// declared name in the wrong case.
type UnknownName struct {
	Name    string // as found in the environment
	Nearest string // the closest declared name, "" when none is close
}

// String is the warning to print: "DPML_LEADER is not a DPML setting
// (nearest: DPML_LEADERS)".
func (u UnknownName) String() string {
	if u.Nearest == "" {
		return u.Name + " is not a DPML setting"
	}
	return fmt.Sprintf("%s is not a DPML setting (nearest: %s)", u.Name, u.Nearest)
}

// Unknown returns the names in environ ("NAME=value" entries, as from
// os.Environ) that start with DPML_ in any case but are not in Vars, each
// with the nearest declared name, sorted by name. A setting that is
// misspelt is otherwise silently ignored, so a tool or the engine calls
// this at setup and warns once per name. Names with a word TEST or MPITEST
// (DPML_TEST_SOAK_DURATION, DPML_SHM_TEST_CHILD) are reserved for the test
// suites and never reported.
func Unknown(environ []string) []UnknownName {
	seen := map[string]bool{}
	var out []UnknownName
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if seen[name] || !strings.HasPrefix(strings.ToUpper(name), Prefix) {
			continue
		}
		seen[name] = true
		if _, ok := find(name); ok || reservedForTests(name) {
			continue
		}
		out = append(out, UnknownName{Name: name, Nearest: Nearest(name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reservedForTests reports whether name has a word TEST or MPITEST after
// the prefix (DPML_TEST_X, DPML_SHM_TEST_CHILD, DPML_MPITEST_SELFTEST).
func reservedForTests(name string) bool {
	for _, w := range strings.Split(strings.ToUpper(name), "_")[1:] {
		if w == "TEST" || w == "MPITEST" {
			return true
		}
	}
	return false
}

// Nearest returns the declared name closest to name (compared in upper
// case, by edit distance, a swap of two neighbours counting as one edit),
// or "" when even the closest needs more than a third of name's letters
// after the prefix changed (at least 2 edits are always allowed).
func Nearest(name string) string {
	up := strings.TrimPrefix(strings.ToUpper(name), Prefix)
	best, bestD := "", -1
	for _, v := range Vars {
		d := editDistance(up, strings.TrimPrefix(v.Name, Prefix))
		if bestD < 0 || d < bestD {
			best, bestD = v.Name, d
		}
	}
	if bestD < 0 || bestD > max(2, len(up)/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
