//go:build !mpich

package main

// Open MPI is the default (as in package mpi); -tags mpich builds against
// MPICH (pkg-config mpich) and its ABI relatives; fortran.c says how the
// Fortran entry points differ.

// #cgo pkg-config: ompi-c
import "C"

// fused.h is dpml/internal/fused's header, copied here so that the build
// cache, which hashes a package's own files, rebuilds this package's C
// when it changes (TestFusedHeaderCopy fails while the copy is stale).
//
//go:generate cp ../dpml/internal/fused/fused.h fused.h
