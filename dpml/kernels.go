package dpml

import (
	"fmt"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// kernel combines nsrc source vectors into dst, element by element, in the
// fixed order dst = ((src0 op src1) op src2) op ... . dst may alias src0
// but no other source. Fixing the order is what makes float results
// reproducible and identical on every rank.
type kernel func(dst unsafe.Pointer, srcs []unsafe.Pointer, n int)

// kernels[kind][op] is nil where the op is invalid for the kind.
var kernels [mpi.KindComplex128 + 1][mpi.OpBxor + 1]kernel

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type real interface {
	integer | ~float32 | ~float64
}

type number interface {
	real | ~complex64 | ~complex128
}

func init() {
	registerInteger[int8](mpi.KindInt8)
	registerInteger[int16](mpi.KindInt16)
	registerInteger[int32](mpi.KindInt32)
	registerInteger[int64](mpi.KindInt64)
	registerInteger[uint8](mpi.KindUint8)
	registerInteger[uint16](mpi.KindUint16)
	registerInteger[uint32](mpi.KindUint32)
	registerInteger[uint64](mpi.KindUint64)
	registerReal[float32](mpi.KindFloat32)
	registerReal[float64](mpi.KindFloat64)
	registerNumber[complex64](mpi.KindComplex64)
	registerNumber[complex128](mpi.KindComplex128)
}

//go:generate go run ./internal/kernelgen -o kernels_gen.go

func minOf[E real](a, b E) E {
	if b < a {
		return b
	}
	return a
}

func maxOf[E real](a, b E) E {
	if b > a {
		return b
	}
	return a
}

func truth[E integer](b bool) E {
	if b {
		return 1
	}
	return 0
}

// blockBytes bounds the slice of dst worked on at once, so that dst stays in
// L1 while several sources stream through it.
const blockBytes = 8 << 10

// blocked builds a kernel from the generated loops of one op: per block of
// dst it folds the sources in, up to three at a time, keeping their order.
func blocked[E number](two func(d, a, b []E), three func(d, a, b, c []E), four func(d, a, b, c, e []E)) kernel {
	return func(dstp unsafe.Pointer, srcs []unsafe.Pointer, n int) {
		if n == 0 || len(srcs) == 0 {
			return
		}
		var z E
		es := int(unsafe.Sizeof(z))
		blk := blockBytes / es
		// Sources are sliced where they are used: a local array of
		// slices (one per source) would be zeroed on every call, which
		// at one or two elements costs more than the fold (perf, the
		// tree at 8 B).
		for lo := 0; lo < n; lo += blk {
			m := min(blk, n-lo)
			at := func(i int) []E { return unsafe.Slice((*E)(unsafe.Add(srcs[i], lo*es)), m) }
			d := unsafe.Slice((*E)(unsafe.Add(dstp, lo*es)), m)
			first, i := at(0), 1
			switch len(srcs) - i {
			case 0:
				copy(d, first)
			case 1:
				two(d, first, at(i))
				i++
			case 2:
				three(d, first, at(i), at(i+1))
				i += 2
			default:
				four(d, first, at(i), at(i+1), at(i+2))
				i += 3
			}
			for ; len(srcs)-i >= 3; i += 3 {
				four(d, d, at(i), at(i+1), at(i+2))
			}
			switch len(srcs) - i {
			case 2:
				three(d, d, at(i), at(i+1))
			case 1:
				two(d, d, at(i))
			}
		}
	}
}

// kernelFor returns the kernel for kind and op, or an error naming the pair.
func kernelFor(k mpi.Kind, op mpi.Op) (kernel, error) {
	if k < 0 || k > mpi.KindComplex128 || op < 0 || op > mpi.OpBxor || kernels[k][op] == nil {
		return nil, fmt.Errorf("dpml: op %v is not defined for %v", op, k)
	}
	return kernels[k][op], nil
}
