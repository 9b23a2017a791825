// Command dpml-info lists every DPML-Go setting with its current value,
// where the value comes from (its default or the environment), the ranks
// it must agree on, and what it means, as the MPI libraries' own listings
// do (ompi_info --param, MPICH's CVAR list). It needs no MPI and runs
// anywhere, so a job script can check its environment before the job:
//
//	dpml-info                       every setting, then the internal and test-only variables
//	dpml-info -short                one line per setting, no meanings
//	DPML_LEADER=4 dpml-info -short  flags the misspelt name: "nearest: DPML_LEADERS"
//	dpml-info -version              the build (commit, Go release, vector kernels)
//
// Variables set by DPML's own tools (dpmlrun, the test harness) and those
// read only by the tests are listed after the user settings, apart. A
// DPML_* variable of the environment that is not a setting is reported
// with the nearest setting's name (config.Unknown), and a value that does
// not parse with its error; either makes the exit status 1, and each is
// also printed to stderr. The full table: docs/ENVIRONMENT.md.
package main
