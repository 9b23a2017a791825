//go:build !amd64

package tsc

const supported = false

// Read returns 0: no counter is read on this architecture (Usable is
// false).
func Read() uint64 { return 0 }
