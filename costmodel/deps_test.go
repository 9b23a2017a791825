package costmodel

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeLinksNoFitting: the engine's side of the cost model (this
// package, through dpml into libdpml.so) must not pull in the offline
// tools or their numerics (gonum's BLAS/LAPACK).
func TestRuntimeLinksNoFitting(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{"github.com/dpmlgo/dpml/costmodel", "github.com/dpmlgo/dpml/dpml", "github.com/dpmlgo/dpml/dropin"} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "gonum.org/") || dep == "github.com/dpmlgo/dpml/costmodel/offline" {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
