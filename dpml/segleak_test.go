package dpml

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestSetupKilledLeavesNoSegment: a job killed (SIGKILL) while its engine
// sets up, outside dpmlrun's sweep, leaves nothing in the segment
// directory: the node head is killed right after creating the node
// segment, before the other local ranks have mapped it, the moment a named
// segment is most exposed (a named segment stayed behind there, and
// nothing ever removed it). The directory is a fresh one under /dev/shm
// that no launcher sweeps (the ranks set DPML_SHM_DIR themselves).
func TestSetupKilledLeavesNoSegment(t *testing.T) {
	if mpitest.InRank() {
		t.Skip("parent-only test")
	}
	for _, victim := range []int{0, 2} { // the heads of node 1 and node 2
		t.Run("head-rank-"+strconv.Itoa(victim), func(t *testing.T) {
			dir, err := os.MkdirTemp("/dev/shm", "leaktest-")
			if err != nil {
				t.Skipf("no /dev/shm to test in: %v", err)
			}
			defer os.RemoveAll(dir)
			rep, err := mpitest.Exec(mpitest.Options{
				Test:    "TestSetupKilledChild",
				Layout:  mpitest.Even(2, 2),
				Timeout: 90 * time.Second,
				// Set by the ranks themselves: the launcher sweeps the
				// DPML_SHM_DIR it is given after the job.
				Env: []string{"DPML_TEST_SETUP_KILL=" + strconv.Itoa(victim), "DPML_TEST_SHM_DIR=" + dir},
			})
			if err == nil {
				t.Fatalf("the job whose rank %d was killed succeeded:\n%v", victim, rep)
			}
			if rep != nil && rep.TimedOut {
				t.Fatalf("the job hung until the harness timeout: %v", err)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				t.Errorf("left in the segment directory after the kill: %s", e.Name())
			}
		})
	}
}

func TestSetupKilledChild(t *testing.T) {
	v := os.Getenv("DPML_TEST_SETUP_KILL")
	if v == "" {
		t.Skip("run by TestSetupKilledLeavesNoSegment")
	}
	victim, _ := strconv.Atoi(v)
	t.Setenv(config.ShmDir, os.Getenv("DPML_TEST_SHM_DIR"))
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		testHookSegmentCreated = func(c *Comm) {
			if w.Rank() == victim {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		defer func() { testHookSegmentCreated = nil }()
		c, err := New(w)
		if err == nil {
			c.Close()
		}
		t.Fatalf("rank %d: New returned (%v) in a job whose rank %d was killed", w.Rank(), err, victim)
	})
}
