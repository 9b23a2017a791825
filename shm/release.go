package shm

import (
	"sync/atomic"
	"unsafe"
)

// StoreRelease sets f to v with release order: every store this thread made
// before it is visible to a process that sees v with f.Load. That is all a
// single-writer flag needs ("my data of generation v is ready"), and it is
// cheaper than f.Store, which is sequentially consistent: on amd64 Store is
// an XCHG, a full fence that stalls the writer until it owns the flag's
// line, which its readers hold (perf, the tree at 8 B: 13% of a leaf's time
// sat on that one instruction). On amd64 (TSO: stores are not reordered
// with earlier stores) a plain MOV has release order; arm64 uses STLR;
// other architectures fall back to f.Store. The stores are assembly, so
// the compiler cannot move the caller's earlier stores past them either.
func StoreRelease(f *atomic.Uint64, v uint64) {
	storeRelease((*uint64)(unsafe.Pointer(f)), v)
}
