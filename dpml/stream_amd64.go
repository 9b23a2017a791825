package dpml

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func streamCopyAVX(dst, src unsafe.Pointer, blocks uintptr)

// demoteLines takes an address, not a pointer: the lines are in the node
// segment (memory Go does not manage), and the first may begin before p.
func demoteLines(addr, lines uintptr)

// demote hints that the n bytes at p (in the node segment), just written
// by this core, will be read by other cores next: CLDEMOTE per cache line
// (DPML_DEMOTE).
func demote(p unsafe.Pointer, n int) {
	if n <= 0 {
		return
	}
	first := uintptr(p) &^ (alignBytes - 1)
	last := (uintptr(p) + uintptr(n) - 1) &^ (alignBytes - 1)
	demoteLines(first, (last-first)/alignBytes+1)
}

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
