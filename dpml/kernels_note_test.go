package dpml

import (
	"runtime"
	"strings"
	"testing"
)

func TestKernelNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"quiet by default", map[string]string{}, false},
		{"verbose 0", map[string]string{"DPML_VERBOSE": "0"}, false},
		{"verbose, no launcher", map[string]string{"DPML_VERBOSE": "1"}, true},
		{"verbose 2", map[string]string{"DPML_VERBOSE": " 2 "}, true},
		{"not a number", map[string]string{"DPML_VERBOSE": "yes"}, false},
		{"rank 0 of Open MPI", map[string]string{"DPML_VERBOSE": "1", "OMPI_COMM_WORLD_RANK": "0"}, true},
		{"rank 3 of Open MPI", map[string]string{"DPML_VERBOSE": "1", "OMPI_COMM_WORLD_RANK": "3"}, false},
		{"rank 1 of MPICH", map[string]string{"DPML_VERBOSE": "1", "PMI_RANK": "1"}, false},
		{"rank 0 of PMIx", map[string]string{"DPML_VERBOSE": "1", "PMIX_RANK": "0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scalarKernelsNote(func(k string) string { return tc.env[k] })
			if (got != "") != tc.want {
				t.Errorf("note %q, want one: %v", got, tc.want)
			}
			if got != "" && (!strings.Contains(got, "GOEXPERIMENT=simd") || !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1) {
				t.Errorf("note %q: want one line naming GOEXPERIMENT=simd", got)
			}
		})
	}
}

// TestKernelBuild: the build says it has the vector kernels exactly when
// the toolchain built it with the simd experiment on amd64 (the Go
// release string names the experiments a binary was built with).
func TestKernelBuild(t *testing.T) {
	want := strings.Contains(runtime.Version(), "simd") && runtime.GOARCH == "amd64"
	if vectorKernels != want {
		t.Errorf("vectorKernels = %v; %s on %s", vectorKernels, runtime.Version(), runtime.GOARCH)
	}
}
