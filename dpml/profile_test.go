package dpml

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestMachineProfile: a run that learns saves the machine profile (one
// file in DPML_PROFILE_DIR), and the next communicator starts from it: its
// keys come loaded with the measured arms and their samples before any
// call. A profile whose recorded key is another machine's is ignored, and
// so is every profile under DPML_PROFILE=off, which also writes none.
func TestMachineProfile(t *testing.T) {
	dir := sharedTempDir(t)
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		profiles := filepath.Join(dir, "profiles")
		t.Setenv("DPML_PROFILE", "auto")
		t.Setenv("DPML_PROFILE_DIR", profiles)
		t.Setenv("DPML_TUNER", "auto")
		t.Setenv("DPML_TUNER_BUDGET", "-1") // learn within the test's calls
		sizes := []int{16, 4 << 10}
		buf := make([]float32, 4<<10)
		run := func(calls int) *Comm {
			c, err := New(w, WithSegmentBytes(64<<10))
			if err != nil {
				t.Fatal(err)
			}
			for i := range calls {
				if err := AllreduceInPlace(c, buf[:sizes[i%len(sizes)]], mpi.OpSum); err != nil {
					t.Fatal(err)
				}
			}
			return c
		}
		c := run(1200)
		learned := map[costmodel.Key]costmodel.Arm{}
		for _, in := range c.Tuner().Infos() {
			if in.Calls > 0 && in.Samples > 0 && in.State == learn.Frozen {
				learned[in.Key] = in.Arm
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Barrier(); err != nil { // rank 0 has saved
			t.Fatal(err)
		}
		if len(learned) == 0 {
			t.Fatal("no key settled in 1200 calls")
		}
		files, _ := filepath.Glob(filepath.Join(profiles, "profile-*.json"))
		if len(files) != 1 {
			t.Fatalf("profiles after a learning run: %v, want one", files)
		}
		t.Setenv("DPML_TUNER_BUDGET", "2")
		loaded := func(c *Comm) (n int) {
			for k, arm := range learned {
				if in, ok := c.Tuner().Info(k); ok && in.Samples > 0 && in.Arm == arm && in.State == learn.Frozen {
					n++
				}
			}
			return n
		}
		c2 := run(0)
		if n := loaded(c2); n != len(learned) {
			t.Errorf("%d of %d learned keys loaded from the profile", n, len(learned))
		}
		c2.Close()
		w.Barrier()
		// Another machine's profile under this one's name: ignored.
		if w.Rank() == 0 {
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var tb map[string]any
			if err := json.Unmarshal(data, &tb); err != nil {
				t.Fatal(err)
			}
			tb["provenance"].(map[string]any)["note"] = "machine profile: another machine"
			data, _ = json.Marshal(tb)
			if err := os.WriteFile(files[0], data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		w.Barrier()
		t.Setenv("DPML_PROFILE", "read")
		c3 := run(0)
		if n := loaded(c3); n != 0 {
			t.Errorf("%d keys loaded from another machine's profile, want 0", n)
		}
		c3.Close()
		// Off: nothing read, nothing written.
		t.Setenv("DPML_PROFILE", "off")
		t.Setenv("DPML_PROFILE_DIR", filepath.Join(dir, "off"))
		t.Setenv("DPML_TUNER_BUDGET", "-1")
		c4 := run(1200)
		c4.Close()
		w.Barrier()
		if files, _ := filepath.Glob(filepath.Join(dir, "off", "*")); len(files) != 0 {
			t.Errorf("DPML_PROFILE=off wrote %v", files)
		}
	})
}
