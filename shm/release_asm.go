//go:build amd64 || arm64

package shm

//go:noescape
func storeRelease(p *uint64, v uint64)
