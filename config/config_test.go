package config

import (
	"errors"
	"math"
	"math/big"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestTableSorted(t *testing.T) {
	if !sort.SliceIsSorted(Vars, func(i, j int) bool { return Vars[i].Name < Vars[j].Name }) {
		t.Fatal("config.Vars must be sorted by name (lookup is a binary search)")
	}
	for _, v := range Vars {
		if !strings.HasPrefix(v.Name, "DPML_") || v.Doc == "" {
			t.Errorf("%s: every variable needs the DPML_ prefix and a doc", v.Name)
		}
		if v.Kind == KindEnum && len(v.Values) < 2 {
			t.Errorf("%s: an enum needs its values", v.Name)
		}
		// Every keyword is documented: the Doc says what it means.
		for _, kw := range v.Values {
			if kw != strings.ToLower(kw) {
				t.Errorf("%s: keyword %q must be lower case", v.Name, kw)
			}
			if len(v.Values) > 1 && !strings.Contains(v.Doc, "`"+kw+"`") {
				t.Errorf("%s: keyword %q is not explained in its doc (write it as `%s`)", v.Name, kw, kw)
			}
		}
		// The default parses.
		if v.Default != "" {
			if _, err := v.Parse(v.Default); err != nil {
				t.Errorf("%s: default %q: %v", v.Name, v.Default, err)
			}
		}
		if v.Min > v.Max {
			t.Errorf("%s: range [%d, %d]", v.Name, v.Min, v.Max)
		}
	}
}

// TestComparedSettings: every variable that must be equal on all ranks and
// that the engine or the drop-in library reads is compared across ranks,
// and only those.
func TestComparedSettings(t *testing.T) {
	for _, v := range Vars {
		reads := strings.Contains(v.Users, "engine") || strings.Contains(v.Users, "libdpml.so")
		want := v.Scope == AllRanks && reads
		if got := v.Agreed != NotCompared; got != want {
			t.Errorf("%s (scope %v, read by %s): compared %v, want %v", v.Name, v.Scope, v.Users, v.Agreed, want)
		}
	}
	if got := Compared(AtDropin); !slices.Equal(got, []string{Disable, DropinFrom, MinBytes, SetupAfter, SetupWorld}) {
		t.Errorf("compared by the drop-in: %v", got)
	}
	if got := Compared(AtNew); !slices.Contains(got, Leaders) || !slices.Contains(got, Pipeline) ||
		!slices.Contains(got, SegmentBytes) || !slices.Contains(got, Tuner) || !slices.Contains(got, TuningFile) {
		t.Errorf("compared by New: %v", got)
	}
}

// TestIntraHasTree: the lead's tree transport is a value of DPML_INTRA.
func TestIntraHasTree(t *testing.T) {
	v, err := Lookup(Intra)
	if err != nil || !slices.Equal(v.Values, []string{"auto", "shm", "cma", "tree"}) {
		t.Fatalf("DPML_INTRA values %v, %v", v.Values, err)
	}
}

func TestDocsUpToDate(t *testing.T) {
	got, err := os.ReadFile("../docs/ENVIRONMENT.md")
	if err != nil {
		t.Fatalf("read generated docs: %v (run go generate ./config)", err)
	}
	if string(got) != Markdown() {
		t.Fatal("docs/ENVIRONMENT.md is stale: run go generate ./config")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, val string
		check     func() error
	}{
		{Timeout, "1.5", func() error { return expect(Duration(Timeout))(1500 * time.Millisecond) }},
		{Timeout, "250ms", func() error { return expect(Duration(Timeout))(250 * time.Millisecond) }},
		{Timeout, "-1", func() error { return expect(Duration(Timeout))(-time.Second) }},
		{Timeout, "1e-9", func() error { return expect(Duration(Timeout))(time.Nanosecond) }},
		{SegmentBytes, "64K", func() error { return expect(Bytes(SegmentBytes))(int64(64 << 10)) }},
		{SegmentBytes, "2MiB", func() error { return expect(Bytes(SegmentBytes))(int64(2 << 20)) }},
		{SegmentBytes, " 8 kb ", func() error { return expect(Bytes(SegmentBytes))(int64(8 << 10)) }},
		{Leaders, "auto", func() error { return expect(IntOrAuto(Leaders))(0) }},
		{Leaders, "AUTO", func() error { return expect(IntOrAuto(Leaders))(0) }},
		{Leaders, "8", func() error { return expect(IntOrAuto(Leaders))(8) }},
		{Leaders, "999", func() error { return expect(IntOrAuto(Leaders))(999) }}, // New clamps, with a warning
		{Disable, "yes", func() error { return expect(Bool(Disable))(true) }},
		{Intra, "CMA", func() error { return expect(Enum(Intra))("cma") }},
		{Intra, "tree", func() error { return expect(Enum(Intra))("tree") }},
		{Tuner, "Static", func() error { return expect(Enum(Tuner))("static") }},
		{NodeSplit, "host", func() error { return expect(Enum(NodeSplit))("host") }},
		{StreamBytes, "off", func() error { return expectKw(BytesOr(StreamBytes))(0, "off") }},
		{StreamBytes, "32M", func() error { return expectKw(BytesOr(StreamBytes))(32<<20, "") }},
		{Verbose, "2", func() error { return expect(Int(Verbose))(2) }},
	}
	for _, tc := range tests {
		t.Setenv(tc.name, tc.val)
		if err := tc.check(); err != nil {
			t.Errorf("%s=%s: %v", tc.name, tc.val, err)
		}
	}
	if _, err := Get("DPML_NOT_DECLARED"); !errors.Is(err, ErrUndeclared) {
		t.Errorf("reading an undeclared variable: %v, want ErrUndeclared", err)
	}
}

// TestBadValues: every bad value is an error that wraps ErrInvalid and
// names the variable (out-of-range values are never clamped silently or
// wrapped around).
func TestBadValues(t *testing.T) {
	for _, tc := range []struct{ name, val string }{
		{Leaders, "0"}, {Leaders, "abc"}, {Leaders, "100000"}, {Leaders, "-1"},
		{Pipeline, "x"}, {Pipeline, "100000"}, {Pipeline, "65"}, {Pipeline, "0"},
		{Timeout, "soon"}, {Timeout, "1e10"}, {Timeout, "NaN"}, {Timeout, "Inf"}, {Timeout, "-Inf"},
		{Timeout, "1e-12"}, {Timeout, "1e400"}, {Timeout, "300000h"},
		{SegmentBytes, "-1"}, {SegmentBytes, "1K"}, {SegmentBytes, "17179869184G"}, {SegmentBytes, "1G"},
		{Disable, "maybe"}, {DropinFrom, "0"}, {DropinFrom, "-3"}, {MinBytes, "lots"}, {MinBytes, "9223372036854775807K"},
		{Intra, "fast"}, {Tuner, "bogus"}, {NodeSplit, "rack"}, {StreamBytes, "0"}, {StreamBytes, "sometimes"},
		{Verbose, "3"}, {Verbose, "-1"}, {Verbose, "x"}, {Spin, "-5"},
	} {
		t.Setenv(tc.name, tc.val)
		v, _ := Lookup(tc.name)
		_, err := GetValue(tc.name)
		if err == nil {
			t.Errorf("%s=%q: want an error", tc.name, tc.val)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%q: %v: want ErrInvalid naming the variable", tc.name, tc.val, err)
		}
		if _, cerr := Canonical(tc.name); cerr == nil {
			t.Errorf("%s=%q: Canonical accepted it", tc.name, tc.val)
		}
		_ = v
	}
}

// TestParseBytesOverflow: values past the int64 range in every unit, and
// every unit at the int64 edge.
func TestParseBytesOverflow(t *testing.T) {
	for _, s := range []string{"17179869184G", "8589934592G", "9223372036854775807K", "9223372036854775808",
		"99999999999999999999", "8796093022208M", "8589934592GiB"} {
		if n, err := ParseBytes(s); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseBytes(%q) = %d, %v: want an overflow error", s, n, err)
		}
	}
	for s, want := range map[string]int64{
		"9223372036854775807": math.MaxInt64, "8589934591G": 8589934591 << 30, "0": 0, "0K": 0,
		"4096": 4096, "64k": 64 << 10, "64KiB": 64 << 10, "64 KB": 64 << 10, "12B": 12, "2g": 2 << 30,
	} {
		if n, err := ParseBytes(s); err != nil || n != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"", "K", "B", "-4", "+4", "1.5K", "4T", "0x10", "1_000", "4 4K", "K4"} {
		if n, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) = %d: want an error", s, n)
		}
	}
}

func TestParseDurationEdges(t *testing.T) {
	for _, s := range []string{"1e10", "NaN", "nan", "Inf", "+Inf", "-Inf", "1e-12", "-1e-12", "1e400", "2562048h", "0.0000000001"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v: want an error", s, d)
		}
	}
	for s, want := range map[string]time.Duration{
		"0": 0, "60": time.Minute, "1.5": 1500 * time.Millisecond, "-1": -time.Second, "1e-9": 1, "250ms": 250 * time.Millisecond,
		"1m30s": 90 * time.Second, "-5s": -5 * time.Second, "1e6": 1e6 * time.Second, "277h": 277 * time.Hour,
	} {
		if d, err := ParseDuration(s); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, d, err, want)
		}
	}
}

func TestTypeString(t *testing.T) {
	for name, want := range map[string]string{
		Pipeline: "int in [1, 64], or `auto`",
		Intra:    "`auto` \\| `shm` \\| `cma` \\| `tree`",
		Verbose:  "int in [0, 2]",
		Timeout:  "duration",
	} {
		v, _ := Lookup(name)
		if got := v.TypeString(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// FuzzParseBytes: never a panic, never a wrapped number: an accepted value
// equals the exact product computed with big integers, and FormatBytes
// round-trips.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"4096", "64K", "4MiB", "1G", " 8 kb ", "17179869184G", "8589934592G",
		"9223372036854775807K", "9223372036854775807", "-1", "", "B", "1.5M", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseBytes(%q): %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d < 0", s, n)
		}
		// Independent evaluation: digits times the unit, in big integers.
		u := strings.ToUpper(strings.TrimSpace(s))
		mult := int64(1)
		for _, x := range byteUnits {
			if strings.HasSuffix(u, x.suffix) {
				u, mult = strings.TrimSpace(strings.TrimSuffix(u, x.suffix)), x.mult
				break
			}
		}
		want, ok := new(big.Int).SetString(u, 10)
		if !ok {
			t.Fatalf("ParseBytes(%q) = %d, but %q is not a decimal number", s, n, u)
		}
		want.Mul(want, big.NewInt(mult))
		if want.Cmp(big.NewInt(n)) != 0 {
			t.Fatalf("ParseBytes(%q) = %d, want %v", s, n, want)
		}
		if back, err := ParseBytes(FormatBytes(n)); err != nil || back != n {
			t.Fatalf("round trip %d -> %q -> %d, %v", n, FormatBytes(n), back, err)
		}
	})
}

// FuzzParseDuration: finite, within ±MaxDuration, zero only for a zero
// input, and the same as the float or Go-syntax evaluation.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"60s", "500ms", "1.5", "-1", "1e10", "NaN", "Inf", "1e-12", "0", "1m30s", "2562048h", "1e-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseDuration(%q): %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if d > MaxDuration || d < -MaxDuration {
			t.Fatalf("ParseDuration(%q) = %v: beyond MaxDuration", s, d)
		}
		if back, err := ParseDuration(d.String()); err != nil || back != d {
			t.Fatalf("round trip %v -> %q -> %v, %v", d, d.String(), back, err)
		}
	})
}

// FuzzVarParse parses every variable of the table (bytes, durations,
// enums, ints with keywords, bools) from the fuzzed string: never a panic,
// an accepted value lies in its range and its canonical form parses back
// to itself.
func FuzzVarParse(f *testing.F) {
	for _, s := range []string{"auto", "AUTO", "off", "shm", "tree", "static", "host", "1", "999", "100000", "64K",
		"1e10", "yes", "-1", "", "abc", "17179869184G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range Vars {
			val, err := v.Parse(s)
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("%s.Parse(%q): %v does not wrap ErrInvalid", v.Name, s, err)
				}
				continue
			}
			if val.Keyword == "" && v.Kind == KindEnum {
				t.Fatalf("%s.Parse(%q): an enum without a keyword", v.Name, s)
			}
			if val.Keyword != "" && !slices.Contains(v.Values, val.Keyword) {
				t.Fatalf("%s.Parse(%q): keyword %q not among %v", v.Name, s, val.Keyword, v.Values)
			}
			if err := v.inRange(val); err != nil {
				t.Fatalf("%s.Parse(%q) accepted an out-of-range value: %v", v.Name, s, err)
			}
			c := v.Canonical(val)
			back, err := v.Parse(c)
			if err != nil || back != val {
				t.Fatalf("%s: %q -> canonical %q -> %+v, %v; want %+v", v.Name, s, c, back, err, val)
			}
		}
	})
}

type mismatch struct{ got, want any }

func (m mismatch) Error() string { return "mismatch" }

func expect[T comparable](got T, err error) func(T) error {
	return func(want T) error {
		if err != nil {
			return err
		}
		if got != want {
			return mismatch{got, want}
		}
		return nil
	}
}

func expectKw(n int64, kw string, err error) func(int64, string) error {
	return func(wn int64, wkw string) error {
		if err != nil {
			return err
		}
		if n != wn || kw != wkw {
			return mismatch{[]any{n, kw}, []any{wn, wkw}}
		}
		return nil
	}
}

// TestChanged: only the settings set in the environment, in table order,
// with their canonical values; "none" without any.
func TestChanged(t *testing.T) {
	for _, v := range Vars {
		t.Setenv(v.Name, "")
		os.Unsetenv(v.Name)
	}
	if got := Changed(); got != "none" {
		t.Errorf("no settings: %q, want none", got)
	}
	t.Setenv("DPML_TUNER", "model")
	t.Setenv("DPML_LEADERS", "4")
	if got, want := Changed(), "DPML_LEADERS=4 DPML_TUNER=model"; got != want {
		t.Errorf("Changed() = %q, want %q", got, want)
	}
}
