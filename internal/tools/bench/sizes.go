package bench

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"sort"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
)

// DefaultSizes is the default -sizes value: 4 B to 64 MiB in x4 steps.
const DefaultSizes = "4:64M:x4"

// MaxSize bounds a message size so that size arithmetic cannot overflow.
const MaxSize = 1 << 40

// ParseSize parses a byte count with config.ParseBytes, the one byte-size
// parser of DPML-Go (a decimal integer with an optional binary unit K, M, G,
// also KB/KiB, ..., or B), and bounds it by MaxSize.
func ParseSize(s string) (int, error) {
	n, err := config.ParseBytes(s)
	if err != nil {
		// config's text leads with "config: invalid value", which reads
		// oddly inside a flag's message; the value and the wanted form
		// are what the user needs.
		return 0, fmt.Errorf("size %q: not a byte count (want e.g. 4, 64K, 4MiB, 1G)", strings.TrimSpace(s))
	}
	if n > MaxSize {
		return 0, fmt.Errorf("size %q: larger than %s", s, results.FormatSize(MaxSize))
	}
	return int(n), nil
}

// FormatSize writes a byte count compactly: 4, 1K, 64K, 1M, 1536 (exact

// ParseSizes parses a -sizes value: a comma-separated list whose items are
// single sizes ("4", "1K") or ranges "FROM:TO[:STEP]". STEP is "xF" (or
// "*F") for a geometric range with integer factor F >= 2 (default x2) or
// "+S" for an arithmetic range with increment S (a size, e.g. +4K). Ranges
// include FROM and every step up to and including TO. The result is sorted
// ascending without duplicates. Zero sizes are rejected.
func ParseSizes(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("sizes: empty list")
	}
	seen := map[int]bool{}
	var out []int
	add := func(n int) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if !strings.Contains(item, ":") {
			n, err := ParseSize(item)
			if err != nil {
				return nil, fmt.Errorf("sizes: %w", err)
			}
			if n == 0 {
				return nil, fmt.Errorf("sizes: size 0 in %q", item)
			}
			add(n)
			continue
		}
		parts := strings.Split(item, ":")
		if len(parts) > 3 {
			return nil, fmt.Errorf("sizes: range %q: want FROM:TO[:xF|:+S]", item)
		}
		from, err := ParseSize(parts[0])
		if err != nil {
			return nil, fmt.Errorf("sizes: range %q: %w", item, err)
		}
		to, err := ParseSize(parts[1])
		if err != nil {
			return nil, fmt.Errorf("sizes: range %q: %w", item, err)
		}
		if from == 0 || to < from {
			return nil, fmt.Errorf("sizes: range %q: want 0 < FROM <= TO", item)
		}
		step := "x2"
		if len(parts) == 3 {
			step = strings.TrimSpace(parts[2])
		}
		switch {
		case strings.HasPrefix(step, "x") || strings.HasPrefix(step, "X") || strings.HasPrefix(step, "*"):
			f, err := strconv.Atoi(step[1:])
			if err != nil || f < 2 {
				return nil, fmt.Errorf("sizes: range %q: step %q: want xF with integer F >= 2", item, step)
			}
			for n := from; n <= to; n *= f {
				add(n)
				if n > to/f {
					break
				}
			}
		case strings.HasPrefix(step, "+"):
			inc, err := ParseSize(step[1:])
			if err != nil || inc == 0 {
				return nil, fmt.Errorf("sizes: range %q: step %q: want +S with a size S > 0", item, step)
			}
			if (to-from)/inc > 100000 {
				return nil, fmt.Errorf("sizes: range %q: more than 100000 sizes", item)
			}
			for n := from; n <= to; n += inc {
				add(n)
			}
		default:
			return nil, fmt.Errorf("sizes: range %q: step %q: want xF or +S", item, step)
		}
	}
	sort.Ints(out)
	return out, nil
}

// CheckElemSizes returns an error naming the sizes that are not a whole
// number of elements of elemSize bytes (a sweep would silently measure
// another size: -sizes 3 with float32 measured 4 bytes).
func CheckElemSizes(sizes []int, elemSize int) error {
	var bad []string
	for _, s := range sizes {
		if elemSize > 0 && s%elemSize != 0 {
			bad = append(bad, results.FormatSize(s))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("sizes %s are not multiples of the %d-byte element", strings.Join(bad, ","), elemSize)
	}
	return nil
}

// ElementCounts maps byte sizes to element counts for an element size:
// a size that is not a multiple of elemSize (or smaller than one element)
// is rounded up to whole elements. The result is ascending and without
// duplicates; it is what a sweep iterates over (bytes = count*elemSize).
func ElementCounts(sizes []int, elemSize int) []int {
	if elemSize <= 0 {
		panic("bench: ElementCounts: element size must be positive")
	}
	seen := map[int]bool{}
	var out []int
	for _, s := range sizes {
		c := (s + elemSize - 1) / elemSize
		if c < 1 {
			c = 1
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}
