// Package userdocs holds the tests that keep the user's documents true:
// the README's C program and commands and its Go program are extracted
// and run as written (the C program preloaded with and linked to a freshly
// built libdpml.so, the Go program on dpmlrun's emulated cluster), every
// relative link of the README and docs/ leads to a file, and make install
// into a temporary prefix gives a library that a C program finds with
// pkg-config, links and runs with.
//
// A README block is tested when an HTML comment right above its fence
// says how:
//
//	<!-- readme-test: file sum.c -->   the block is the file sum.c
//	<!-- readme-test: run -->          the block's commands run with bash -e
//
// The commands run in a directory holding the files, with bin/ holding
// libdpml.so, dpmlx.h and dpmlrun as make build leaves them. The package
// has no code of its own; go test ./internal/userdocs runs it (Open MPI's
// mpicc and mpirun, and user namespaces for dpmlrun, are needed; without
// them the tests skip).
package userdocs
