package bench

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"sort"
	"strconv"
	"strings"
)

// LeadersMax stands for "max" in a -leaders list: the largest leader count
// the engine allows on this layout ((*dpml.Comm).MaxLeaders()).
const LeadersMax = -1

// AllVariants is the default -variants value, in run order.
var AllVariants = []string{results.VariantNative, results.VariantDPML, results.VariantAuto}

// ParseLeaders parses a -leaders list such as "1,2,4,8,max". "max" is
// returned as LeadersMax. Values must be >= 1.
func ParseLeaders(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		if strings.EqualFold(f, "max") {
			out = append(out, LeadersMax)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("leaders: %q: want a positive integer or max", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("leaders: empty list")
	}
	return out, nil
}

// ResolveLeaders replaces LeadersMax by maxLeaders, drops values larger than
// maxLeaders (the engine would clamp or reject them) and duplicates, and
// returns the rest ascending, with the dropped values for a diagnostic.
func ResolveLeaders(list []int, maxLeaders int) (kept, dropped []int) {
	seen := map[int]bool{}
	for _, l := range list {
		if l == LeadersMax {
			l = maxLeaders
		}
		if l < 1 || l > maxLeaders {
			dropped = append(dropped, l)
			continue
		}
		if !seen[l] {
			seen[l] = true
			kept = append(kept, l)
		}
	}
	sort.Ints(kept)
	return kept, dropped
}

// ParsePositiveInts parses a comma-separated list of positive integers
// (e.g. -pipeline 1,2,4), keeping order and dropping duplicates.
func ParsePositiveInts(name, s string) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q: want a positive integer", name, f)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", name)
	}
	return out, nil
}

// ParseVariants parses -variants ("native,dpml,auto", any subset, any order;
// the result is in the canonical order native, dpml, auto).
func ParseVariants(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range splitList(s) {
		f = strings.ToLower(f)
		if f == "dpml-auto" {
			f = results.VariantAuto
		}
		ok := false
		for _, v := range AllVariants {
			if f == v {
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("variants: unknown variant %q (want native, dpml, auto)", f)
		}
		want[f] = true
	}
	var out []string
	for _, v := range AllVariants {
		if want[v] {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("variants: empty list")
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
