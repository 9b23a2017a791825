//go:build !amd64 && !arm64

package shm

import (
	"sync/atomic"
	"unsafe"
)

func storeRelease(p *uint64, v uint64) {
	(*atomic.Uint64)(unsafe.Pointer(p)).Store(v)
}
