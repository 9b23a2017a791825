package shm

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dpmlgo/dpml/plan"
)

// CacheLine is the cache-line size, in bytes, flag words are spread by.
//
// Each flag word that a different process writes should sit on its own cache
// line (offsets PadTo(x, CacheLine) apart): two flags in one line make every
// store by one writer invalidate the line under all the other waiters (false
// sharing), which turns a wait on a quiet flag into a stream of coherence
// misses. Intel parts also prefetch the adjacent line pair, so a layout that
// can afford it may use 2*CacheLine as the stride. It is plan.CacheLine,
// the one definition the engine's partitions and the cost model use too.
const CacheLine = plan.CacheLine

// Uint64At returns the 8 bytes b[off:off+8] as an atomic 64-bit word, the
// flag words of a segment layout. The memory is typically a Segment mapping
// shared with other processes; every access to the word, by every process,
// must go through atomic operations.
//
// Uint64At is the unchecked hot-path form for layouts validated once up
// front (with Uint64AtChecked or a layout check of the caller's own): it
// panics, as a programming error, if off is negative, b[off:off+8] is out of
// range, or &b[off] is not 8-byte aligned (a misaligned word is not atomic,
// or splits a lock across cache lines). A page-aligned mapping and an off
// that is a multiple of 8 is always aligned.
func Uint64At(b []byte, off int) *atomic.Uint64 {
	p, err := Uint64AtChecked(b, off)
	if err != nil {
		panic(err)
	}
	return p
}

// Uint64AtChecked is Uint64At returning an error instead of panicking.
func Uint64AtChecked(b []byte, off int) (*atomic.Uint64, error) {
	if off < 0 || off > len(b)-8 {
		return nil, fmt.Errorf("shm: flag word at offset %d out of range of %d bytes", off, len(b))
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%8 != 0 {
		return nil, fmt.Errorf("shm: flag word at offset %d (address %#x) not 8-byte aligned", off, uintptr(p))
	}
	// atomic.Uint64 is a single uint64 (its other fields are zero-sized).
	return (*atomic.Uint64)(p), nil
}

// Uint64sAt returns n flag words at off, off+stride, ..., checked like
// Uint64AtChecked; stride is normally CacheLine (one word per line).
func Uint64sAt(b []byte, off, stride, n int) ([]*atomic.Uint64, error) {
	if n < 0 || stride < 8 && n > 1 {
		return nil, fmt.Errorf("shm: %d flag words with stride %d", n, stride)
	}
	out := make([]*atomic.Uint64, n)
	for i := range out {
		p, err := Uint64AtChecked(b, off+i*stride)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
