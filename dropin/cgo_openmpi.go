//go:build !mpich

package main

// Open MPI is the default (as in package mpi); -tags mpich builds against
// MPICH (pkg-config mpich) and its ABI relatives; fortran.c says how the
// Fortran entry points differ.

// #cgo pkg-config: ompi-c
// #cgo CFLAGS: -I${SRCDIR}/../dpml/internal/fused
import "C"
