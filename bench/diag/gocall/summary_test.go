package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summary: medians (or the fastest with -min) per variant and size, Go/C
// ratios against c (c-spin for spin variants), the gosched mode as part of
// the variant name.
func TestSummary(t *testing.T) {
	csv := csvHeader + `
c,1x32,32,0,c,-,8,20000,3.000,2.9,0.0,0.0,0,0,0,0,3
c,1x32,32,1,c,-,8,20000,4.000,3.9,0.0,0.0,0,0,0,0,3
c,1x32,32,2,c,-,8,20000,5.000,4.9,0.0,0.0,0,0,0,0,3
c,1x32,32,0,c-spin,-,0,20000,3.100,3.1,0.0,0.0,0,0,0,0,3
go,1x32,32,0,go,off,8,20000,16.000,15,0.2,0.19,0,0,0,0,6
go,1x32,32,1,go,off,8,20000,12.000,11,0.2,0.21,0,0,0,0,6
go,1x32,32,2,go,off,8,20000,14.000,13,0.2,0.20,0,0,0,0,6
go,1x32,32,0,go,auto,8,20000,4.400,4,0.0,0.01,0,0,0,0,6
go,1x32,32,0,go-spin,auto,0,20000,3.410,3.4,0.0,0.002,0,0,0,0,6
`
	f := filepath.Join(t.TempDir(), "a.csv")
	if err := os.WriteFile(f, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := summary([]string{f}, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| bytes | c | c-spin | go/off | go/auto | go-spin/auto |",
		"| 8 | 4.00 0.000 | - | 14.00 (3.50x) 0.200 | 4.40 (1.10x) 0.010 | - |",
		"| 0 | - | 3.10 0.000 | - | - | 3.41 (1.10x) 0.002 |",
		"median of up to 3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := summary([]string{"-min", f}, &b); err != nil {
		t.Fatal(err)
	}
	if want := "| 8 | 3.00 0.000 | - | 12.00 (4.00x) 0.190 | 4.40 (1.47x) 0.010 | - |"; !strings.Contains(b.String(), want) {
		t.Errorf("summary -min lacks %q:\n%s", want, b.String())
	}
	if err := summary(nil, &b); err == nil {
		t.Error("no files: no error")
	}
}
