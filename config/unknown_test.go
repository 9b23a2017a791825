package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestUnknown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		want    []UnknownName
	}{
		{"none", []string{"PATH=/bin", "HOME=/root"}, nil},
		{"declared names are settings", []string{"DPML_LEADERS=2", "DPML_VERBOSE=1", "DPML_TIMEOUT="}, nil},
		{"one letter missing", []string{"DPML_LEADER=2"}, []UnknownName{{"DPML_LEADER", "DPML_LEADERS"}}},
		{"two letters swapped", []string{"DPML_PIPLEINE=2"}, []UnknownName{{"DPML_PIPLEINE", "DPML_PIPELINE"}}},
		{"a word changed", []string{"DPML_SEGMENT_SIZE=1M"}, []UnknownName{{"DPML_SEGMENT_SIZE", "DPML_SEGMENT_BYTES"}}},
		{"wrong case", []string{"dpml_verbose=1"}, []UnknownName{{"dpml_verbose", "DPML_VERBOSE"}}},
		{"nothing near", []string{"DPML_COMPLETELY_DIFFERENT=1"}, []UnknownName{{"DPML_COMPLETELY_DIFFERENT", ""}}},
		{"sorted, each name once", []string{"DPML_TUNNER=auto", "DPML_CHEK=1", "DPML_TUNNER=model"},
			[]UnknownName{{"DPML_CHEK", "DPML_CHECK"}, {"DPML_TUNNER", "DPML_TUNER"}}},
		{"test suites' names are reserved", []string{"DPML_TEST_SOAK_DURATION=1m", "DPML_SHM_TEST_CHILD=1", "DPML_MPITEST_SELFTEST=1"}, nil},
		{"other prefixes are not ours", []string{"DPMLRUN=/bin/dpmlrun", "XDPML_LEADERS=1", "OMPI_MCA_btl=self"}, nil},
		{"an entry without =", []string{"DPML_LEADRS"}, []UnknownName{{"DPML_LEADRS", "DPML_LEADERS"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unknown(tc.environ); !slices.Equal(got, tc.want) {
				t.Errorf("Unknown(%q) = %v, want %v", tc.environ, got, tc.want)
			}
		})
	}
}

func TestUnknownNameString(t *testing.T) {
	for _, tc := range []struct {
		u    UnknownName
		want string
	}{
		{UnknownName{"DPML_LEADER", "DPML_LEADERS"}, "DPML_LEADER is not a DPML setting (nearest: DPML_LEADERS)"},
		{UnknownName{"DPML_XYZZY_PLUGH", ""}, "DPML_XYZZY_PLUGH is not a DPML setting"},
	} {
		if got := tc.u.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.u, got, tc.want)
		}
	}
}

// TestEditDistance holds the distance to values counted by hand.
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "ABC", 3},
		{"LEADERS", "LEADERS", 0},
		{"LEADER", "LEADERS", 1},
		{"LEADERS", "LAEDERS", 1}, // one swap
		{"SIZE", "BYTES", 4},
		{"KITTEN", "SITTING", 3},
		{"CA", "ABC", 3}, // optimal string alignment, not full Damerau
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestSettings(t *testing.T) {
	env := []string{
		"DPML_LEADERS=4",
		"DPML_VERBOSE=  ",          // blank: the default
		"DPML_TIMEOUT=10s",         // overridden by the later entry
		"DPML_TIMEOUT= 30s ",       // trimmed
		"DPML_PIPELINE=banana",     // invalid
		"DPML_NOT_A_SETTING=1",     // not in the listing
		"PATH=/usr/bin:/bin",       // ignored
		"DPML_SEGMENT_BYTES=2M=x",  // '=' in the value: invalid bytes
		"DPML_MPITEST_TIMEOUT=90s", // test-only, listed with its class
	}
	got := map[string]Current{}
	cur := Settings(env)
	if len(cur) != len(Vars) {
		t.Fatalf("Settings lists %d variables, the table has %d", len(cur), len(Vars))
	}
	for i, c := range cur {
		if c.Name != Vars[i].Name {
			t.Fatalf("entry %d is %s, want table order (%s)", i, c.Name, Vars[i].Name)
		}
		got[c.Name] = c
	}
	for _, tc := range []struct {
		name   string
		value  string
		source Source
		bad    bool
	}{
		{Leaders, "4", FromEnvironment, false},
		{Verbose, "0", FromDefault, false},
		{Timeout, "30s", FromEnvironment, false},
		{Pipeline, "banana", FromEnvironment, true},
		{SegmentBytes, "2M=x", FromEnvironment, true},
		{Check, "false", FromDefault, false},
		{MPITestLimit, "90s", FromEnvironment, false},
		{ShmDir, "/dev/shm", FromDefault, false},
	} {
		c := got[tc.name]
		if c.Value != tc.value || c.Source != tc.source || (c.Err != nil) != tc.bad {
			t.Errorf("%s: value %q from %v, err %v; want %q from %v, invalid %v", tc.name, c.Value, c.Source, c.Err, tc.value, tc.source, tc.bad)
		}
		if tc.bad && !errors.Is(c.Err, ErrInvalid) {
			t.Errorf("%s: error %v does not wrap ErrInvalid", tc.name, c.Err)
		}
	}
	if got[MPITestLimit].Class != TestOnly || got[Leaders].Class != User || got[RunPPN].Class != Internal {
		t.Errorf("classes: %v %v %v", got[MPITestLimit].Class, got[Leaders].Class, got[RunPPN].Class)
	}
}

// TestClasses: a variable whose doc says it is internal or for the
// emulation only is not listed among the user settings, and the reverse.
func TestClasses(t *testing.T) {
	for _, v := range Vars {
		internalDoc := strings.HasPrefix(v.Doc, "Internal:") || strings.HasPrefix(v.Doc, "Set by dpmlrun")
		testDoc := strings.HasPrefix(v.Doc, "EMULATION ONLY") || v.Users == "tests"
		want := User
		switch {
		case internalDoc:
			want = Internal
		case testDoc:
			want = TestOnly
		}
		if v.Class != want {
			t.Errorf("%s: class %v, want %v (doc %.40q, users %q)", v.Name, v.Class, want, v.Doc, v.Users)
		}
	}
	md := Markdown()
	user, rest, ok := strings.Cut(md, "## Internal and test-only variables")
	if !ok {
		t.Fatal("Markdown has no section for internal and test-only variables")
	}
	for _, v := range Vars {
		inUser := strings.Contains(user, "| `"+v.Name+"` |")
		inRest := strings.Contains(rest, "| `"+v.Name+"` |")
		if inUser != (v.Class == User) || inRest != (v.Class != User) {
			t.Errorf("%s (%v): in the user table %v, in the internal table %v", v.Name, v.Class, inUser, inRest)
		}
	}
}
