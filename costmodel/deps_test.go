package costmodel

import (
	"encoding/json"
	"os"
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
	for _, pkg := range []string{mod + "costmodel", mod + "costmodel/learn", mod + "dpml", mod + "dropin", mod + "internal/runtime/..."} {
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

// TestLibraryModuleGraph: the library's own module (the repository's
// go.mod, without go.work's tool modules) requires no plotting or
// progress-bar module, so a program importing the library never loads
// them (module graph pruning stops at gonum, whose own requirements a
// program that does not import it never reads): the tools that need
// them (cmd/dpmlbench, cmd/dpmlnccl, internal/tools/bench) are modules
// of their own. The oracle is go mod edit -json of the root go.mod.
// Mutation: gonum.org/v1/plot required in the root go.mod -> it is
// listed.
func TestLibraryModuleGraph(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "mod", "edit", "-json")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v\n%s", err, out)
	}
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != "github.com/dpmlgo/dpml" || len(mod.Require) == 0 {
		t.Fatalf("go.mod of %q with %d requirements: not the library's", mod.Module.Path, len(mod.Require))
	}
	for _, r := range mod.Require {
		if strings.HasPrefix(r.Path, "gonum.org/v1/plot") || strings.HasPrefix(r.Path, "github.com/schollz/progressbar") {
			t.Errorf("the library's go.mod requires %s %s", r.Path, r.Version)
		}
	}
}
