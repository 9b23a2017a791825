package dpml

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/mpi"
)

// TestNilComm: a nil communicator is an error, not a panic; before
// mpi.Init (where mpi.World is nil) the error says to call it and wraps
// mpi.ErrNotInit.
func TestNilComm(t *testing.T) {
	initialized := mpi.Initialized()
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"Agree", Agree(nil, nil, nil)},
		{"New", nilCommError("New")},
	} {
		err := tc.err
		if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), tc.what+" on a nil communicator") {
			t.Errorf("%s(nil): %v; want ErrSetup naming %s", tc.what, err, tc.what)
		}
		if got := errors.Is(err, mpi.ErrNotInit); got != !initialized {
			t.Errorf("%s(nil) with MPI initialized %v: wraps mpi.ErrNotInit %v: %v", tc.what, initialized, got, err)
		}
		if !initialized && !strings.Contains(err.Error(), "call mpi.Init first") {
			t.Errorf("%s(nil) before mpi.Init: %v; want it to say to call mpi.Init", tc.what, err)
		}
	}
}

// TestPlanPrints: a Plan value and a pointer to it print the same drawing.
func TestPlanPrints(t *testing.T) {
	p := Plan{Count: 8, ElemSize: 4, Nodes: 1, PPN: 1, Phases: []Phase{PhaseNative}}
	p.Variant = Native
	v, ptr := fmt.Sprint(p), fmt.Sprint(&p)
	if v != ptr || !strings.HasPrefix(v, "plan native: 8 x 4B") {
		t.Errorf("Plan value prints %q, pointer %q", v, ptr)
	}
}
