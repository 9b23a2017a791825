package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/mpi"
)

// TestHeadersUpToDate: the committed copies of dpml_kinds.h are what the Go
// tables generate (run go generate ./mpi after changing mpi.Kind or mpi.Op).
func TestHeadersUpToDate(t *testing.T) {
	want := Header()
	for _, p := range []string{filepath.Join("..", "..", "dpml_kinds.h"), filepath.Join("..", "..", "..", "dropin", "dpml_kinds.h")} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./mpi", p)
		}
	}
}

// The header numbers every kind and op as Go does, with its size and MPI
// handle.
func TestHeaderContents(t *testing.T) {
	h := string(Header())
	for _, k := range mpi.Kinds() {
		for _, want := range []string{kindName(k) + " = " + itoa(int(k)) + ",", "X(" + kindName(k) + ", " + itoa(k.Size()) + ", " + k.DatatypeName() + ", "} {
			if !strings.Contains(h, want) {
				t.Errorf("header lacks %q", want)
			}
		}
	}
	for _, o := range mpi.Ops() {
		for _, want := range []string{opName(o) + " = " + itoa(int(o)) + ",", "X(" + opName(o) + ", MPI_" + strings.ToUpper(o.String()) + ")"} {
			if !strings.Contains(h, want) {
				t.Errorf("header lacks %q", want)
			}
		}
	}
	if !strings.Contains(h, "DPML_NKINDS = "+itoa(len(mpi.Kinds()))+"\n") || !strings.Contains(h, "DPML_NOPS = "+itoa(len(mpi.Ops()))+"\n") {
		t.Error("header counts differ from the Go tables")
	}
	if category(mpi.KindUint16) != "UINT" || category(mpi.KindInt64) != "SINT" || category(mpi.KindFloat32) != "FLOAT" || category(mpi.KindComplex64) != "COMPLEX" {
		t.Error("kind categories")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
