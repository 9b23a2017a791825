package sharp

// The out-of-band collectives libsharp_coll calls during sharp_coll_init
// and sharp_coll_comm_init, implemented over MPI on the group's
// communicator. They run on the thread that called into the library (the
// attaching goroutine's), synchronously.

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/cgo"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// oobComm is what the library's oob_ctx pointer stands for (a cgo.Handle).
type oobComm struct {
	c *mpi.Comm
}

func oobOf(ctx unsafe.Pointer) (*oobComm, bool) {
	defer func() { _ = recover() }() // a bad handle: an error, not a crash
	o, ok := cgo.Handle(uintptr(ctx)).Value().(*oobComm)
	return o, ok && o != nil && o.c != nil
}

// oobFail reports an out-of-band failure on stderr (the library gets only
// a status) and returns the library's error status.
func oobFail(what string, err error) C.int {
	fmt.Fprintf(os.Stderr, "dpml: sharp out-of-band %s: %v\n", what, err)
	return -1
}

//export dpmlSharpOOBBarrier
func dpmlSharpOOBBarrier(ctx unsafe.Pointer) C.int {
	o, ok := oobOf(ctx)
	if !ok {
		return oobFail("barrier", fmt.Errorf("bad context %p", ctx))
	}
	if err := o.c.Barrier(); err != nil {
		return oobFail("barrier", err)
	}
	return 0
}

//export dpmlSharpOOBBcast
func dpmlSharpOOBBcast(ctx unsafe.Pointer, buf unsafe.Pointer, n C.int, root C.int) C.int {
	o, ok := oobOf(ctx)
	if !ok || n < 0 || (n > 0 && buf == nil) {
		return oobFail("bcast", fmt.Errorf("bad arguments (context %p, %d bytes at %p)", ctx, int(n), buf))
	}
	if n == 0 {
		return 0
	}
	if err := mpi.Bcast(o.c, unsafe.Slice((*byte)(buf), int(n)), int(root)); err != nil {
		return oobFail("bcast", err)
	}
	return 0
}

// dpmlSharpOOBGather gathers n bytes of every member's sbuf into rbuf on
// root (rank order). The binding has no MPI_Gather, so it allgathers into
// a temporary buffer: the library calls it a few times at setup only.
//
//export dpmlSharpOOBGather
func dpmlSharpOOBGather(ctx unsafe.Pointer, root C.int, sbuf, rbuf unsafe.Pointer, n C.int) C.int {
	o, ok := oobOf(ctx)
	if !ok || n < 0 || (n > 0 && sbuf == nil) || (int(root) == o.c.Rank() && n > 0 && rbuf == nil) {
		return oobFail("gather", fmt.Errorf("bad arguments (context %p, root %d, %d bytes)", ctx, int(root), int(n)))
	}
	if root < 0 || int(root) >= o.c.Size() {
		return oobFail("gather", fmt.Errorf("root %d of %d members", int(root), o.c.Size()))
	}
	if n == 0 {
		return 0
	}
	all := make([]byte, int(n)*o.c.Size())
	if err := mpi.Allgather(o.c, unsafe.Slice((*byte)(sbuf), int(n)), all); err != nil {
		return oobFail("gather", err)
	}
	if int(root) == o.c.Rank() {
		copy(unsafe.Slice((*byte)(rbuf), len(all)), all)
	}
	return 0
}
