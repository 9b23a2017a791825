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
