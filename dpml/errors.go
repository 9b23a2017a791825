package dpml

import (
	"fmt"

	"github.com/dpmlgo/dpml/mpi"
)

// nilCommError is the error of an entry point (what: "New", "Agree")
// given a nil communicator. The usual cause is a program that did not
// call mpi.Init, before which mpi.World returns nil: the error then wraps
// mpi.ErrNotInit as well as ErrSetup and says so.
func nilCommError(what string) error {
	if !mpi.Initialized() {
		return fmt.Errorf("%w: %s on a nil communicator: %w: call mpi.Init first (mpi.World is nil before it)",
			ErrSetup, what, mpi.ErrNotInit)
	}
	return fmt.Errorf("%w: %s on a nil communicator", ErrSetup, what)
}
