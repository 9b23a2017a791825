//go:build !amd64

package dpml

import "unsafe"

var haveStream = false

// streamCopy is a plain copy where no streaming-store kernel exists.
func streamCopy(dst, src unsafe.Pointer, n int) {
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
}

// demote does nothing where no cache-demote instruction exists.
func demote(p unsafe.Pointer, n int) {}
