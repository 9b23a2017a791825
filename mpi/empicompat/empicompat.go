// Package empicompat mirrors the common calls of github.com/emer/empi's mpi
// package on top of github.com/dpmlgo/dpml/mpi, so programs written for
// empi port by changing the import:
//
//	import mpi "github.com/dpmlgo/dpml/mpi/empicompat"
//
// Covered: Init, InitThreadSafe, Finalize, IsOn, WorldRank, WorldSize,
// NewComm, Printf and friends, the Op constants, and per-type Comm methods
// Send*, Recv*, Bcast*, Reduce*, AllReduce*, AllGather* for the suffixes
// F64, F32, Int, I64, U64, I32, U32, I16, U16, I8 ([]byte), C128, C64.
// Gather* and Scatter* are not provided.
//
// Differences from empi: the exact MPI datatypes are used (MPI_INT64_T for
// []int on 64-bit, MPI_UINT8_T for []byte); argument errors (bad ranks,
// length mismatches, ops not defined for the type) come back as errors
// before any MPI call; and Reduce*/AllReduce* with dest and orig the very
// same slice reduce in place instead of being an error.
package empicompat

import (
	"fmt"
	"log"
	"strconv"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// LogErrors makes every returned error also be logged, as empi does.
var LogErrors = true

// PrintAllProcs makes Printf and Println print on every rank, not just 0.
var PrintAllProcs = false

// Root is rank 0.
const Root int = 0

// Op is an aggregation operation, in empi's order.
type Op int

const (
	OpSum Op = iota
	OpMax
	OpMin
	OpProd // product
	OpLAND // logical AND
	OpLOR  // logical OR
	OpBAND // bitwise AND
	OpBOR  // bitwise OR
)

var opMap = [...]mpi.Op{OpSum: mpi.OpSum, OpMax: mpi.OpMax, OpMin: mpi.OpMin, OpProd: mpi.OpProd,
	OpLAND: mpi.OpLand, OpLOR: mpi.OpLor, OpBAND: mpi.OpBand, OpBOR: mpi.OpBor}

// ToMPI returns the dpml/mpi Op.
func (op Op) ToMPI() mpi.Op {
	if op < 0 || int(op) >= len(opMap) {
		return mpi.Op(-1) // rejected by every call with mpi.ErrOp
	}
	return opMap[op]
}

func logErr(err error, ctxt string) error {
	if err != nil && LogErrors {
		log.Printf("MPI Error: %s %v", ctxt, err)
	}
	return err
}

// Init initializes MPI (errors are logged).
func Init() {
	_, err := mpi.Init()
	logErr(err, "Init")
}

// InitThreadSafe initializes MPI with MPI_THREAD_MULTIPLE and fails if the
// library does not provide it.
func InitThreadSafe() error {
	p, err := mpi.InitThread(mpi.ThreadMultiple)
	if err != nil {
		return logErr(err, "InitThreadSafe")
	}
	if p != mpi.ThreadMultiple {
		return logErr(fmt.Errorf("MPI_THREAD_MULTIPLE can't be set: got %v", p), "InitThreadSafe")
	}
	return nil
}

// Finalize finalizes MPI.
func Finalize() { logErr(mpi.Finalize(), "Finalize") }

// IsOn reports whether MPI is initialized (true even after Finalize).
func IsOn() bool { return mpi.Initialized() }

// WorldRank is this process's rank in World; 0 before Init.
func WorldRank() int {
	if w := mpi.World(); w != nil {
		return w.Rank()
	}
	return 0
}

// WorldSize is the size of World; 1 before Init.
func WorldSize() int {
	if w := mpi.World(); w != nil {
		return w.Size()
	}
	return 1
}

// Comm is a communicator with empi's method names.
type Comm struct{ c *mpi.Comm }

// NewComm returns World for empty ranks, else a communicator of the given
// World ranks, in that order. It is collective over World. On a rank not in
// ranks the Comm is valid but empty: Rank is -1, Size 0, and calls fail.
func NewComm(ranks []int) (*Comm, error) {
	w := mpi.World()
	if w == nil {
		return nil, logErr(mpi.ErrNotInit, "NewComm")
	}
	if len(ranks) == 0 {
		return &Comm{c: w}, nil
	}
	color, key := mpi.Undefined, 0
	for i, r := range ranks {
		if r == w.Rank() {
			color, key = 0, i
			break
		}
	}
	c, err := w.Split(color, key)
	if err != nil {
		return nil, logErr(err, "NewComm")
	}
	return &Comm{c: c}, nil
}

// FromComm wraps a dpml/mpi communicator.
func FromComm(c *mpi.Comm) *Comm { return &Comm{c: c} }

// Comm returns the underlying dpml/mpi communicator (nil for a non-member).
func (cm *Comm) Comm() *mpi.Comm { return cm.c }

// Rank is this process's rank (-1 if not a member).
func (cm *Comm) Rank() int {
	if cm.c == nil {
		return -1
	}
	return cm.c.Rank()
}

// Size is the number of processes (0 if not a member).
func (cm *Comm) Size() int {
	if cm.c == nil {
		return 0
	}
	return cm.c.Size()
}

// Abort aborts every process.
func (cm *Comm) Abort() error { return logErr(mpi.Abort(cm.c, 0), "Abort") }

// Barrier waits for every process.
func (cm *Comm) Barrier() error { return logErr(cm.c.Barrier(), "Barrier") }

// Printf prints on rank 0 only (every rank, prefixed, if PrintAllProcs).
func Printf(fs string, pars ...any) {
	if !PrintAllProcs && WorldRank() > 0 {
		return
	}
	if WorldRank() > 0 {
		fs = fmt.Sprintf("P%d: ", WorldRank()) + fs
	}
	fmt.Printf(fs, pars...)
}

// AllPrintf prints on every rank, prefixed with "P<rank>: ".
func AllPrintf(fs string, pars ...any) {
	fmt.Printf(fmt.Sprintf("P%d: ", WorldRank())+fs, pars...)
}

// Println prints on rank 0 only (every rank, prefixed, if PrintAllProcs).
func Println(fs string) {
	if !PrintAllProcs && WorldRank() > 0 {
		return
	}
	if WorldRank() > 0 {
		fs = fmt.Sprintf("P%d: ", WorldRank()) + fs
	}
	fmt.Println(fs)
}

// AllPrintln prints on every rank, prefixed with "P<rank>: ".
func AllPrintln(fs string) { fmt.Println(fmt.Sprintf("P%d: ", WorldRank()) + fs) }

// Generic bodies of the typed methods.

func same[T mpi.Number](a, b []T) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func send[T mpi.Number](cm *Comm, toProc, tag int, vals []T, ctxt string) error {
	return logErr(mpi.Send(cm.c, vals, toProc, tag), ctxt)
}

func recv[T mpi.Number](cm *Comm, fmProc, tag int, vals []T, ctxt string) error {
	_, err := mpi.Recv(cm.c, vals, fmProc, tag)
	return logErr(err, ctxt)
}

func bcast[T mpi.Number](cm *Comm, fmProc int, vals []T, ctxt string) error {
	return logErr(mpi.Bcast(cm.c, vals, fmProc), ctxt)
}

func reduce[T mpi.Number](cm *Comm, toProc int, op Op, dest, orig []T, ctxt string) error {
	if same(dest, orig) {
		return logErr(mpi.ReduceInPlace(cm.c, dest, op.ToMPI(), toProc), ctxt)
	}
	return logErr(mpi.Reduce(cm.c, orig, dest, op.ToMPI(), toProc), ctxt)
}

func allReduce[T mpi.Number](cm *Comm, op Op, dest, orig []T, ctxt string) error {
	if same(dest, orig) {
		return logErr(mpi.AllreduceInPlace(cm.c, dest, op.ToMPI()), ctxt)
	}
	return logErr(mpi.Allreduce(cm.c, orig, dest, op.ToMPI()), ctxt)
}

func allGather[T mpi.Number](cm *Comm, dest, orig []T, ctxt string) error {
	return logErr(mpi.Allgather(cm.c, orig, dest), ctxt)
}

// []int has the layout of []int64 or []int32, by platform.
const int64Platform = strconv.IntSize == 64

func asI64(s []int) []int64 {
	return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
func asI32(s []int) []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
