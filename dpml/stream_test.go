package dpml

import (
	"bytes"
	"testing"
	"unsafe"
)

// streamCopy must equal copy for every length and both alignments, and
// write nothing outside the destination.
func TestStreamCopy(t *testing.T) {
	src := make([]byte, 1<<16+512)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{0, 1, 31, 1023, 1024, 1025, 4096 + 17, 1 << 16} {
		for _, so := range []int{0, 1, 13, 32} {
			for _, do := range []int{0, 3, 31, 64} {
				dst := make([]byte, n+256)
				for i := range dst {
					dst[i] = 0xEE
				}
				streamCopy(unsafe.Pointer(&dst[do]), unsafe.Pointer(&src[so]), n)
				if !bytes.Equal(dst[do:do+n], src[so:so+n]) {
					t.Fatalf("n=%d src+%d dst+%d: copy differs", n, so, do)
				}
				for i, b := range dst {
					if (i < do || i >= do+n) && b != 0xEE {
						t.Fatalf("n=%d src+%d dst+%d: byte %d outside the destination written", n, so, do, i)
					}
				}
			}
		}
	}
}

// demote is a hint: it must run on any CPU (a NOP without CLDEMOTE) for any
// length and alignment, and leave the bytes as they were.
func TestDemote(t *testing.T) {
	buf := make([]byte, 4096+256)
	for i := range buf {
		buf[i] = byte(i)
	}
	for _, n := range []int{0, 1, 63, 64, 65, 4096} {
		for _, off := range []int{0, 1, 63, 64} {
			demote(unsafe.Pointer(&buf[off]), n)
		}
	}
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
