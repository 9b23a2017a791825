package costmodel

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeLinksNoFitting: the engine's side of the cost model (this
// package, through dpml into libdpml.so) must not pull in the offline
// tools or their numerics (gonum's BLAS/LAPACK), nor the tools' plotting
// and progress bars, nor a test kit or tool library of internal/ (only
// internal/runtime/ is linked into programs).
func TestRuntimeLinksNoFitting(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const mod = "github.com/dpmlgo/dpml/"
	for _, pkg := range []string{mod + "costmodel", mod + "dpml", mod + "dropin", mod + "internal/runtime/..."} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch {
			case strings.HasPrefix(dep, "gonum.org/"), strings.HasPrefix(dep, "github.com/schollz/progressbar"),
				dep == mod+"costmodel/offline", strings.HasPrefix(dep, mod+"internal/testkit/"),
				strings.HasPrefix(dep, mod+"internal/tools/"), strings.HasPrefix(dep, mod+"cmd/"):
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestOfflineReadsSchemaOnly: the offline fitting reads the clients'
// reports through their schema package (internal/tools/results, standard
// library only), not the tools' library with its plotting and progress
// bars.
func TestOfflineReadsSchemaOnly(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const mod = "github.com/dpmlgo/dpml/"
	for pkg, banned := range map[string][]string{
		mod + "costmodel/offline":      {mod + "internal/tools/bench", "gonum.org/v1/plot", "github.com/schollz/progressbar"},
		mod + "internal/tools/results": {mod, "gonum.org/", "github.com/", "golang.org/x/"},
	} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg {
				continue
			}
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
