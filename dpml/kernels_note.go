package dpml

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
)

// A build without GOEXPERIMENT=simd (a plain go build or go get, outside
// make) gets the portable scalar kernels: the same results, float sums
// slower. Nothing else would tell, so with DPML_VERBOSE set the process
// says so once, at start, on rank 0.
func init() {
	if !vectorKernels {
		if s := scalarKernelsNote(os.Getenv); s != "" {
			fmt.Fprint(os.Stderr, s)
		}
	}
}

// rankEnv are the variables launchers set to the world rank, readable
// before MPI_Init.
var rankEnv = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}

// scalarKernelsNote is the note a build without the vector kernels prints:
// "" unless DPML_VERBOSE is at least 1 and the process is rank 0 of its
// launch, or was started without a launcher.
func scalarKernelsNote(getenv func(string) string) string {
	v, err := strconv.Atoi(strings.TrimSpace(getenv(config.Verbose)))
	if err != nil || v < 1 {
		return ""
	}
	for _, k := range rankEnv {
		if r := strings.TrimSpace(getenv(k)); r != "" {
			if r != "0" {
				return ""
			}
			break
		}
	}
	return "dpml: built without the vector reduction kernels (build with GOEXPERIMENT=simd on amd64, as make does): float sums use the scalar kernels, same results, slower\n"
}
