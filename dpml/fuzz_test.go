package dpml

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
)

// FuzzTuningTable: the tuning-table loader (what rank 0 reads from
// DPML_TUNING_FILE) never panics; it accepts exactly one JSON table, and
// what it accepts builds a tuner and writes back to a table that loads to
// the same bytes.
func FuzzTuningTable(f *testing.F) {
	var def bytes.Buffer
	if err := costmodel.DefaultTable().Write(&def); err != nil {
		f.Fatal(err)
	}
	f.Add(def.Bytes())
	f.Add(append(append([]byte(nil), def.Bytes()...), "garbage"...))
	f.Add(append(append([]byte(nil), def.Bytes()...), def.Bytes()...))
	f.Add(def.Bytes()[:len(def.Bytes())/2])
	for _, s := range []string{"", " ", "{}", `{"schema":1}`, `{"schema":1,"entries":[]} x`, "null", "[]", `{"schema":1,"entries":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := parseTuningTable(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("%v does not wrap ErrConfig", err)
			}
			return
		}
		if _, err := learn.NewTunerFromTable(learn.DefaultConfig(), tb); err != nil {
			return // valid JSON, but not a table this build can use: New reports it
		}
		var a, b bytes.Buffer
		if err := tb.Write(&a); err != nil {
			t.Fatalf("write back: %v", err)
		}
		tb2, err := parseTuningTable(a.Bytes())
		if err != nil {
			t.Fatalf("the table written back does not load: %v\n%s", err, a.Bytes())
		}
		if err := tb2.Write(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("write, load, write differs (%v)", err)
		}
	})
}
