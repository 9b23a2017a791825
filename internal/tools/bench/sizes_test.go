package bench

import (
	"github.com/dpmlgo/dpml/internal/tools/results"
	"reflect"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"4", 4, true},
		{"1K", 1024, true},
		{"1k", 1024, true},
		{"64KiB", 64 << 10, true},
		{"64kb", 64 << 10, true},
		{"16M", 16 << 20, true},
		{"2G", 2 << 30, true},
		{"12B", 12, true},
		{" 8 ", 8, true},
		{"0", 0, true},
		{"", 0, false},
		{"K", 0, false},
		{"-4", 0, false},
		{"1.5K", 0, false},
		{"4T", 0, false},
		{"99999999999G", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestSizeErrors: a bad size's message names the bad part and the form
// wanted.
func TestSizeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"8:abc", `sizes: range "8:abc": size "abc": not a byte count (want e.g. 4, 64K, 4MiB, 1G)`},
		{"abc", `sizes: size "abc": not a byte count`},
		{"4:1K:+zz", `step "+zz": want +S with a size S > 0`},
	} {
		_, err := ParseSizes(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSizes(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int
		want string
	}{{4, "4"}, {1024, "1K"}, {1536, "1536"}, {64 << 10, "64K"}, {1 << 20, "1M"}, {64 << 20, "64M"}, {3 << 30, "3G"}, {1000, "1000"}} {
		if got := results.FormatSize(tc.in); got != tc.want {
			t.Errorf("results.FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := ParseSize(results.FormatSize(tc.in)); err != nil || back != tc.in {
			t.Errorf("round trip %d -> %q -> %d, %v", tc.in, results.FormatSize(tc.in), back, err)
		}
	}
}

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"4,1K,64K", []int{4, 1024, 65536}, true},
		{"64K,4,1K,4", []int{4, 1024, 65536}, true},
		{"4:64", []int{4, 8, 16, 32, 64}, true},
		{"4:64:x2", []int{4, 8, 16, 32, 64}, true},
		{"4:100:x4", []int{4, 16, 64}, true},
		{"4:64M:x4", []int{4, 16, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}, true},
		{"1K:4K:+1K", []int{1024, 2048, 3072, 4096}, true},
		{"8:8", []int{8}, true},
		{"4:16:*2,1M", []int{4, 8, 16, 1 << 20}, true},
		{"", nil, false},
		{"0", nil, false},
		{"0:64", nil, false},
		{"64:4", nil, false},
		{"4:64:x1", nil, false},
		{"4:64:+0", nil, false},
		{"4:64:y2", nil, false},
		{"4:64:x2:1", nil, false},
		{"4,abc", nil, false},
	}
	for _, tc := range tests {
		got, err := ParseSizes(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseSizes(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	def, err := ParseSizes(DefaultSizes)
	if err != nil || def[0] != 4 || def[len(def)-1] != 64<<20 {
		t.Errorf("DefaultSizes %q -> %v, %v", DefaultSizes, def, err)
	}
	// A geometric range ending near MaxSize must not overflow.
	if got, err := ParseSizes("1G:1024G:x4"); err != nil || got[len(got)-1] != 1024<<30 {
		t.Errorf("large range: %v, %v", got, err)
	}
}

func TestElementCounts(t *testing.T) {
	tests := []struct {
		sizes []int
		elem  int
		want  []int
	}{
		{[]int{4, 8, 1024}, 4, []int{1, 2, 256}},
		{[]int{4, 8, 16}, 8, []int{1, 2}}, // 4 B rounds up to one float64
		{[]int{1, 2, 3}, 1, []int{1, 2, 3}},
		{[]int{6}, 4, []int{2}},
	}
	for _, tc := range tests {
		if got := ElementCounts(tc.sizes, tc.elem); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ElementCounts(%v, %d) = %v, want %v", tc.sizes, tc.elem, got, tc.want)
		}
	}
}

func TestParseLeaders(t *testing.T) {
	got, err := ParseLeaders("1,2,4,8,max")
	if err != nil || !reflect.DeepEqual(got, []int{1, 2, 4, 8, LeadersMax}) {
		t.Fatalf("ParseLeaders = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-2"} {
		if _, err := ParseLeaders(bad); err == nil {
			t.Errorf("ParseLeaders(%q): want error", bad)
		}
	}
	tests := []struct {
		in      []int
		max     int
		kept    []int
		dropped []int
	}{
		{[]int{1, 2, 4, 8, LeadersMax}, 2, []int{1, 2}, []int{4, 8}},
		{[]int{1, 2, 4, 8, LeadersMax}, 32, []int{1, 2, 4, 8, 32}, nil},
		{[]int{8, 4, LeadersMax}, 8, []int{4, 8}, nil},
		{[]int{4}, 1, nil, []int{4}},
	}
	for _, tc := range tests {
		k, d := ResolveLeaders(tc.in, tc.max)
		if !reflect.DeepEqual(k, tc.kept) || !reflect.DeepEqual(d, tc.dropped) {
			t.Errorf("ResolveLeaders(%v, %d) = %v, %v; want %v, %v", tc.in, tc.max, k, d, tc.kept, tc.dropped)
		}
	}
}

func TestParsePositiveInts(t *testing.T) {
	got, err := ParsePositiveInts("pipeline", "1, 2,4,2")
	if err != nil || !reflect.DeepEqual(got, []int{1, 2, 4}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "a", "1,-1"} {
		if _, err := ParsePositiveInts("pipeline", bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestParseVariants(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"native,dpml,auto", []string{"native", "dpml", "auto"}, true},
		{"auto,native", []string{"native", "auto"}, true},
		{"dpml-auto", []string{"auto"}, true},
		{"DPML", []string{"dpml"}, true},
		{"", nil, false},
		{"nccl", nil, false},
	}
	for _, tc := range tests {
		got, err := ParseVariants(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseVariants(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseSizes: the -sizes parser never panics, and what it accepts is
// sorted, distinct and within (0, MaxSize].
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{DefaultSizes, "4,1K,64K", "1K:4K:+1K", "4:16:*2,1M", "3", "0", "17179869184G",
		"1:1099511627776:+1", "1G:1024G:x4", "4:64:x1", "a:b", ",", "8:8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSizes(s)
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatalf("ParseSizes(%q): no sizes and no error", s)
		}
		for i, n := range got {
			if n <= 0 || n > MaxSize || i > 0 && n <= got[i-1] {
				t.Fatalf("ParseSizes(%q) = %v: not sorted, distinct, in (0, MaxSize]", s, got)
			}
		}
	})
}
