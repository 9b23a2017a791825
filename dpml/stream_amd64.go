package dpml

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func streamCopyAVX(dst, src unsafe.Pointer, blocks uintptr)

var haveStream = cpu.X86.HasAVX

// streamCopy copies n bytes from src to dst, the bulk with non-temporal
// stores: a receive buffer larger than the last-level cache is written
// without first reading each line in (the read-for-ownership a plain store
// makes), a third of copy-out's memory traffic. Head and tail (alignment)
// use plain copies.
func streamCopy(dst, src unsafe.Pointer, n int) {
	if !haveStream || n < 1024 {
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
		return
	}
	head := int((32 - uintptr(dst)%32) % 32)
	copy(unsafe.Slice((*byte)(dst), head), unsafe.Slice((*byte)(src), head))
	blocks := (n - head) / 128
	streamCopyAVX(unsafe.Add(dst, head), unsafe.Add(src, head), uintptr(blocks))
	done := head + blocks*128
	copy(unsafe.Slice((*byte)(unsafe.Add(dst, done)), n-done), unsafe.Slice((*byte)(unsafe.Add(src, done)), n-done))
}
