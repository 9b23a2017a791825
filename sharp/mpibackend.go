package sharp

import (
	"fmt"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// MPI is the backend for MPI libraries that offload a communicator's
// allreduce to the switches themselves (Open MPI or another MPI built with
// HCOLL or UCC and SHArP enabled, MVAPICH2 with MV2_ENABLE_SHARP): the
// group is a duplicate of the leader communicator, and an operation is
// its MPI_Iallreduce in place. Whether the library really offloads is its
// own configuration (see Env); this backend only gives it communicators of
// one process per node, which is what SHArP groups need.
type MPI struct{}

// Name is "mpi".
func (MPI) Name() string { return "mpi" }

// Attach duplicates c (collective).
func (MPI) Attach(c *mpi.Comm, o AttachOptions) (*Group, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: attach to a nil communicator", ErrUnavailable)
	}
	d, err := c.Dup()
	if err != nil {
		return nil, fmt.Errorf("%w: duplicate the leader communicator: %w", ErrUnavailable, err)
	}
	maxBytes := o.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 4 << 10
	}
	var caps Caps
	for _, k := range mpi.Kinds() {
		caps.Kinds |= kindBits(k)
	}
	for _, op := range mpi.Ops() {
		caps.Ops |= opBits(op)
	}
	// One operation carries any size, and the group runs one at a time:
	// the MPI library pipelines inside it.
	caps.MaxOutstanding = 1
	return &Group{impl: &mpiGroup{c: d}, caps: caps, backend: "mpi", maxBytes: maxBytes}, nil
}

type mpiGroup struct{ c *mpi.Comm }

func (*mpiGroup) staging() []byte { return nil }

func (g *mpiGroup) start(p unsafe.Pointer, n int, k mpi.Kind, op mpi.Op) (reqImpl, error) {
	r, err := iallreduce(g.c, p, n, k, op)
	if err != nil {
		return nil, fmt.Errorf("MPI_Iallreduce: %w", err)
	}
	return mpiReq{r}, nil
}

func (g *mpiGroup) close() error { return g.c.Free() }

type mpiReq struct{ r *mpi.Request }

func (r mpiReq) test() (bool, error) { return r.r.Test() }

// free drops an incomplete request: MPI cannot cancel a collective, and
// after a failure the job is ending.
func (mpiReq) free() {}

// iallreduce starts an in-place MPI_Iallreduce of n elements of kind k at
// p (memory that does not move: shared memory or C memory).
func iallreduce(c *mpi.Comm, p unsafe.Pointer, n int, k mpi.Kind, op mpi.Op) (*mpi.Request, error) {
	switch k {
	case mpi.KindInt8:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*int8)(p), n), op)
	case mpi.KindInt16:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*int16)(p), n), op)
	case mpi.KindInt32:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*int32)(p), n), op)
	case mpi.KindInt64:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*int64)(p), n), op)
	case mpi.KindUint8:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*uint8)(p), n), op)
	case mpi.KindUint16:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*uint16)(p), n), op)
	case mpi.KindUint32:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*uint32)(p), n), op)
	case mpi.KindUint64:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*uint64)(p), n), op)
	case mpi.KindFloat32:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*float32)(p), n), op)
	case mpi.KindFloat64:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*float64)(p), n), op)
	case mpi.KindComplex64:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*complex64)(p), n), op)
	case mpi.KindComplex128:
		return mpi.IallreduceInPlace(c, unsafe.Slice((*complex128)(p), n), op)
	}
	return nil, fmt.Errorf("%w: element kind %v", ErrNotSupported, k)
}

// Open returns the backend called name ("libsharp" with the library at
// path, or "mpi").
func Open(name, path string) (Backend, error) {
	switch name {
	case "libsharp":
		return Libsharp{Path: path}, nil
	case "mpi":
		return MPI{}, nil
	}
	return nil, fmt.Errorf("%w: unknown backend %q (want libsharp or mpi)", ErrUnavailable, name)
}
