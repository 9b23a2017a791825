//go:build !mpich

package main

// Open MPI is the default (as in package mpi); -tags mpich builds against
// MPICH, untested: the Fortran entry points assume Open MPI's bindings.

// #cgo pkg-config: ompi-c
import "C"
