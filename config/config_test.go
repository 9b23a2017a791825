package config

import (
	"os"
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
		{SegmentBytes, "64K", func() error { return expect(Bytes(SegmentBytes))(int64(64 << 10)) }},
		{SegmentBytes, "2MiB", func() error { return expect(Bytes(SegmentBytes))(int64(2 << 20)) }},
		{Leaders, "auto", func() error { return expect(IntOrAuto(Leaders))(0) }},
		{Leaders, "8", func() error { return expect(IntOrAuto(Leaders))(8) }},
		{Disable, "yes", func() error { return expect(Bool(Disable))(true) }},
	}
	for _, tc := range tests {
		t.Setenv(tc.name, tc.val)
		if err := tc.check(); err != nil {
			t.Errorf("%s=%s: %v", tc.name, tc.val, err)
		}
	}
	bad := map[string]string{Leaders: "0", Pipeline: "x", Timeout: "soon", SegmentBytes: "-1", Disable: "maybe"}
	for name, val := range bad {
		t.Setenv(name, val)
		var err error
		switch name {
		case Leaders, Pipeline:
			_, err = IntOrAuto(name)
		case Timeout:
			_, err = Duration(name)
		case SegmentBytes:
			_, err = Bytes(name)
		case Disable:
			_, err = Bool(name)
		}
		if err == nil {
			t.Errorf("%s=%q: want an error", name, val)
		}
	}
	if _, err := Get("DPML_NOT_DECLARED"); err == nil {
		t.Error("reading an undeclared variable must be an error")
	}
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
