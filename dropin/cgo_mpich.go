//go:build mpich

package main

// #cgo pkg-config: mpich
// #cgo CFLAGS: -I${SRCDIR}/../dpml/internal/fused
import "C"
