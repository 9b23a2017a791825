package dpml

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// otherUser returns the credentials of an unprivileged second user
// (nobody) for commands the test runs as someone else, or nil and the
// reason when this process cannot switch users.
func otherUser() (*syscall.Credential, string) {
	if os.Geteuid() != 0 {
		return nil, "not root: cannot run a command as a second user"
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534}, ""
}

// runAs runs argv as cred (nil: as this process).
func runAs(t *testing.T, cred *syscall.Credential, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// TestTuningFileLinkPlanted: a job whose DPML_TUNING_FILE lies in a
// world-writable sticky directory must not write through a symbolic link
// that another user plants at the table's name while the job runs (the
// save followed links by hand, so the link's target, a file of the job's
// user, was overwritten with the table). The save is refused with an error
// naming the link; the target and the link stay as they are. The link is
// planted by user nobody when the test runs as root, else by the test's
// own user (the library's side is the same).
func TestTuningFileLinkPlanted(t *testing.T) {
	dir := sharedTempDir(t)
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		r0 := w.Rank() == 0
		sticky := filepath.Join(dir, "sticky")
		decoy := filepath.Join(dir, "decoy")
		table := filepath.Join(sticky, "table.json")
		const decoyText = "the decoy's own contents\n"
		if r0 {
			// The other user must reach the sticky directory.
			for _, d := range []string{filepath.Dir(dir), dir} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(sticky, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(decoy, []byte(decoyText), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		t.Setenv(config.TuningFile, table)
		c, err := New(w, WithSegmentBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, 1024)
		for range 20 {
			if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
		}
		if r0 {
			cred, why := otherUser()
			if cred == nil {
				t.Logf("the link is planted by the test's own user: %s", why)
			}
			runAs(t, cred, "ln", "-s", decoy, table)
		}
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		err = c.Close()
		if !r0 {
			if err != nil {
				t.Fatalf("rank %d: Close: %v", w.Rank(), err)
			}
			return
		}
		if err == nil || !errors.Is(err, ErrConfig) || !errors.Is(err, costmodel.ErrTableFile) || !strings.Contains(err.Error(), "is a symbolic link") {
			t.Errorf("Close with a planted link: %v; want ErrConfig and costmodel.ErrTableFile naming the link", err)
		}
		if b, err := os.ReadFile(decoy); err != nil || string(b) != decoyText {
			t.Errorf("the link's target was written: %q, %v", b, err)
		}
		if st, err := os.Lstat(table); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the planted link was replaced: %v, %v", st, err)
		}
		t.Logf("rank 0: %v", err)
	})
}

// TestTuningFileCheckedAtSetup: a DPML_TUNING_FILE that Close could not
// save to (its directory does not exist, or the name is a symbolic link)
// is refused at New on every rank with the same error, instead of failing
// at Close and losing the run's learning.
func TestTuningFileCheckedAtSetup(t *testing.T) {
	dir := sharedTempDir(t)
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		if w.Rank() == 0 {
			if err := os.Symlink("target.json", filepath.Join(dir, "link.json")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(dir, "no-such-dir", "t.json")
		link := filepath.Join(dir, "link.json")
		under := filepath.Join(dir, "plain", "t.json")
		runMixed(t, w, []mixedCase{
			{name: "directory missing", env: map[string][2]string{config.TuningFile: {missing, missing}},
				want: []error{ErrConfig}, mentions: []string{"rank 0: ", missing, "no such file or directory"}},
			{name: "a symbolic link", env: map[string][2]string{config.TuningFile: {link, link}},
				want: []error{ErrConfig}, mentions: []string{link + " is a symbolic link"}},
			{name: "directory is a file", env: map[string][2]string{config.TuningFile: {under, under}},
				want: []error{ErrConfig}, mentions: []string{filepath.Join(dir, "plain") + " is not a directory"}},
			{name: "a new file in an existing directory", env: map[string][2]string{config.TuningFile: {filepath.Join(dir, "new.json"), filepath.Join(dir, "new.json")}}, wantClean: true},
		})
	})
}

// TestTuningFileKeepsOtherEntries: entries of the table that this run
// cannot use (another layout's arm with an in-network offload that is not
// attached here, an NCCL tuner plugin's entry) are still in the file after
// the run saves it; they used to be dropped, so a table shared by several
// layouts or tools lost the others' entries.
func TestTuningFileKeepsOtherEntries(t *testing.T) {
	dir := sharedTempDir(t)
	path := filepath.Join(dir, "shared.json")
	foreign := []costmodel.Entry{
		{Elem: "float32", Op: "arith", Log2Bytes: 12, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 2, Pipeline: 1,
			Offload: "sharp", Estimate: 1.5e-5, Samples: 40, State: "frozen"},
		{Coll: "allreduce", Elem: "float32", Op: "arith", Log2Bytes: 20, Nodes: 2, PPN: 8, Variant: "native", Leaders: 4, Pipeline: 1,
			Algo: "ring", Proto: "simple", Estimate: 2e-4, Samples: 10, State: "frozen"},
	}
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		if w.Rank() == 0 {
			tb := costmodel.DefaultTable()
			tb.Entries = append(tb.Entries, foreign...)
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tb.Write(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		t.Setenv(config.TuningFile, path)
		t.Setenv(config.Offload, "off")
		c, err := New(w, WithSegmentBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, 1024)
		for range 20 {
			if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if w.Rank() != 0 {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		tb, err := costmodel.ReadTable(f)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Provenance.Layout != "1x2" {
			t.Errorf("the table was not saved by this run: provenance %+v", tb.Provenance)
		}
		for _, want := range foreign {
			found := false
			for _, en := range tb.Entries {
				found = found || en.Coll == want.Coll && en.Nodes == want.Nodes && en.PPN == want.PPN &&
					en.Log2Bytes == want.Log2Bytes && en.Offload == want.Offload && en.Algo == want.Algo
			}
			if !found {
				t.Errorf("entry %+v lost at save", want)
			}
		}
	})
}

// TestParsedTablesShared: the same table bytes parsed again (each
// communicator's setup reads the machine profile) give the table parsed
// before; other bytes, and bytes that do not parse, do not. Mutation: no
// memory of tables -> "the same bytes parsed twice gave two tables".
func TestParsedTablesShared(t *testing.T) {
	var a, b bytes.Buffer
	if err := costmodel.DefaultTable().Write(&a); err != nil {
		t.Fatal(err)
	}
	tb := costmodel.DefaultTable()
	tb.Entries = tb.Entries[:1]
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	t1, err1 := parseTuningTable(a.Bytes())
	t2, err2 := parseTuningTable(bytes.Clone(a.Bytes()))
	t3, err3 := parseTuningTable(b.Bytes())
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	if t1 != t2 {
		t.Error("the same bytes parsed twice gave two tables")
	}
	if t1 == t3 || len(t3.Entries) != 1 {
		t.Errorf("other bytes gave the first table (%d entries)", len(t3.Entries))
	}
	bad := append(bytes.Clone(a.Bytes()), "x"...)
	for range 2 {
		if _, err := parseTuningTable(bad); err == nil {
			t.Fatal("trailing data: no error")
		}
	}
}
