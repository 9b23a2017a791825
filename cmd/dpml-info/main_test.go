package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/config"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args, env  []string
		code       int
		stdout     []string // lines that must appear
		notStdout  []string // substrings that must not
		stderr     []string // substrings of stderr
		noStderr   bool
		userBefore string // this line comes before the internal section
		afterInt   string // and this one after it
	}{
		{name: "defaults", env: []string{"PATH=/bin"}, code: 0, noStderr: true,
			stdout: []string{
				"DPML_LEADERS = auto (default; must be equal on all ranks)",
				"DPML_TIMEOUT = 60s (default; per rank)",
				"DPML_CPUPROFILE = (unset) (default; per rank)",
				"DPML_FAKESHARP_OSTS = 4 (default; test only, must be equal on all ranks)",
				"DPML_MPITEST = (unset) (default; internal, must be equal on all ranks)",
			},
			notStdout:  []string{"Problems in the environment"},
			userBefore: "DPML_VERBOSE = 0 (default; per rank)",
			afterInt:   "DPML_RUN_PPN = (unset) (default; internal, must be equal on all ranks)"},
		{name: "set from the environment", env: []string{"DPML_LEADERS=4", "DPML_TIMEOUT=5s"}, code: 0, noStderr: true,
			stdout: []string{"DPML_LEADERS = 4 (environment; must be equal on all ranks)", "DPML_TIMEOUT = 5s (environment; per rank)"}},
		{name: "meanings follow each line", env: nil, code: 0,
			stdout: []string{"    Leaders per node `l`, or `auto`. Forces the plan of every call that has"}},
		{name: "short has no meanings", args: []string{"-short"}, env: nil, code: 0,
			notStdout: []string{"Leaders per node"}, stdout: []string{"DPML_LEADERS = auto (default; must be equal on all ranks)"}},
		{name: "misspelt name", args: []string{"-short"}, env: []string{"DPML_LEADER=4"}, code: 1,
			stdout: []string{"Problems in the environment:", "  DPML_LEADER is not a DPML setting (nearest: DPML_LEADERS)"},
			stderr: []string{"dpml-info: DPML_LEADER is not a DPML setting (nearest: DPML_LEADERS)"}},
		{name: "invalid value", args: []string{"-short"}, env: []string{"DPML_PIPELINE=banana"}, code: 1,
			stdout: []string{"DPML_PIPELINE = banana (environment, INVALID; must be equal on all ranks)"},
			stderr: []string{"dpml-info: DPML_PIPELINE=banana is invalid: "}},
		{name: "reserved test names are fine", args: []string{"-short"}, env: []string{"DPML_TEST_SOAK_MAX=3"}, code: 0, noStderr: true,
			notStdout: []string{"DPML_TEST_SOAK_MAX"}},
		{name: "version", args: []string{"-version"}, code: 0, noStderr: true,
			stdout: []string{}, notStdout: []string{"DPML_LEADERS"}},
		{name: "stray argument", args: []string{"extra"}, code: 2, stderr: []string{`unexpected argument "extra"`, "usage: dpml-info"}},
		{name: "unknown flag", args: []string{"-nope"}, code: 2, stderr: []string{"flag provided but not defined: -nope"}},
		{name: "help", args: []string{"-h"}, code: 0, stderr: []string{"usage: dpml-info", "-version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := run(tc.args, tc.env, &o, &e)
			out := o.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, e.String())
			}
			lines := strings.Split(out, "\n")
			for _, want := range tc.stdout {
				if !contains(lines, want) {
					t.Errorf("stdout has no line %q:\n%s", want, out)
				}
			}
			for _, bad := range tc.notStdout {
				if strings.Contains(out, bad) {
					t.Errorf("stdout has %q:\n%s", bad, out)
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(e.String(), want) {
					t.Errorf("stderr has no %q:\n%s", want, e.String())
				}
			}
			if tc.noStderr && e.Len() > 0 {
				t.Errorf("stderr: %s", e.String())
			}
			if tc.userBefore != "" {
				sect := strings.Index(out, "Internal and test-only variables")
				u, i := strings.Index(out, tc.userBefore), strings.Index(out, tc.afterInt)
				if sect < 0 || u < 0 || i < 0 || !(u < sect && sect < i) {
					t.Errorf("want %q before the internal section and %q after it:\n%s", tc.userBefore, tc.afterInt, out)
				}
			}
		})
	}
}

// TestEveryVariableListed: each variable of the table has exactly one
// line in the listing, in the section of its class.
func TestEveryVariableListed(t *testing.T) {
	var o, e bytes.Buffer
	if code := run([]string{"-short"}, nil, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	user, rest, ok := strings.Cut(o.String(), "Internal and test-only variables")
	if !ok {
		t.Fatal("no internal section")
	}
	for _, v := range config.Vars {
		nu, nr := strings.Count(user, "\n"+v.Name+" = "), strings.Count(rest, "\n"+v.Name+" = ")
		if v.Class == config.User && (nu != 1 || nr != 0) || v.Class != config.User && (nu != 0 || nr != 1) {
			t.Errorf("%s (%v): %d lines among the user settings, %d among the others", v.Name, v.Class, nu, nr)
		}
	}
}

func TestVersion(t *testing.T) {
	var o, e bytes.Buffer
	run([]string{"-version"}, nil, &o, &e)
	if s := o.String(); !strings.HasPrefix(s, "dpml-info ") || strings.Count(s, "\n") != 1 || !strings.Contains(s, "vector kernels") {
		t.Errorf("-version printed %q", s)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"one", 10, []string{"one"}},
		{"aaa bbb ccc", 7, []string{"aaa bbb", "ccc"}},
		{"aaa  bbb\nccc", 20, []string{"aaa bbb ccc"}},
		{"abcdefghijkl x", 5, []string{"abcdefghijkl", "x"}},
	} {
		got := wrap(tc.s, tc.width)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
