package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// asNobody runs argv as user nobody (the test runs as root), failing the
// test if it does not succeed.
func asNobody(t *testing.T, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v: %v\n%s", argv, err, out)
	}
}

// TestSweepStaleOnlyOwn: the stale-job sweep removes what a killed job of
// this user left, and nothing another user planted: not a backdated
// /tmp/dpmlrun-<token>-x directory with a /dev/shm/dpml-<token>-v file
// (the sweep used to trust both names and delete the file, whoever owned
// it), not a file named after this user's own job, and nothing at all when
// the state directory is not private. The other user is nobody; the test
// needs root to act as nobody and skips otherwise.
func TestSweepStaleOnlyOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create files as a second user (nobody)")
	}
	base := t.TempDir()
	tmp, shm := filepath.Join(base, "tmp"), filepath.Join(base, "shm")
	for _, d := range []string{tmp, shm} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil { // like /tmp and /dev/shm
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(base), base} { // for nobody to reach tmp and shm
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("DPML_SHM_DIR", shm)
	const mine, theirs, alive = "aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"

	// This user's job, killed: a session directory, a segment and an
	// unlocked record in the state directory.
	session := filepath.Join(tmp, "dpmlrun-"+mine+"-123")
	if err := os.Mkdir(session, 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := markAlive(mine, session)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := os.WriteFile(filepath.Join(stateDirName(0), mine+".lock"), []byte(session), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(shm, "dpml-"+mine+"-seg"), nil, 0o600)
	// A job still running: locked.
	liveSession := filepath.Join(tmp, "dpmlrun-"+alive+"-456")
	os.Mkdir(liveSession, 0o700)
	os.WriteFile(filepath.Join(shm, "dpml-"+alive+"-seg"), nil, 0o600)
	releaseLive, err := markAlive(alive, liveSession)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseLive()
	// Planted by nobody: another job's names, backdated, and a file named
	// after this user's killed job.
	planted := []string{
		filepath.Join(tmp, "dpmlrun-"+theirs+"-x"),
		filepath.Join(shm, "dpml-"+theirs+"-v"),
		filepath.Join(shm, "dpml-"+mine+"-planted"),
	}
	asNobody(t, "mkdir", planted[0])
	asNobody(t, "touch", planted[1], planted[2])
	old := time.Now().Add(-time.Hour)
	for _, p := range planted {
		os.Chtimes(p, old, old)
	}

	removed, err := SweepStale()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{filepath.Join(shm, "dpml-"+mine+"-seg"), session}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, p := range append(planted, liveSession, filepath.Join(shm, "dpml-"+alive+"-seg")) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDirName(0), mine+".lock")); err == nil {
		t.Error("the swept job's record stays")
	}

	// A state directory that is not private: nothing is swept.
	for _, tc := range []struct {
		name  string
		setup func(d string)
	}{
		{"open to others", func(d string) { os.Chmod(d, 0o755) }},
		{"another user's", func(d string) { os.Chown(d, 65534, 65534) }},
		{"a symbolic link", func(d string) {
			os.RemoveAll(d)
			asNobody(t, "mkdir", "-m", "700", filepath.Join(tmp, "elsewhere"))
			asNobody(t, "ln", "-s", filepath.Join(tmp, "elsewhere"), d)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stateDirName(0)
			os.WriteFile(filepath.Join(shm, "dpml-"+mine+"-again"), nil, 0o600)
			os.Mkdir(d, 0o700)
			os.WriteFile(filepath.Join(d, mine+".lock"), []byte(session), 0o600) // a stale record
			tc.setup(d)
			removed, err := SweepStale()
			if err == nil || len(removed) > 0 {
				t.Errorf("swept %v (err %v) through a state directory that is %s", removed, err, tc.name)
			}
			os.RemoveAll(d)
		})
	}
}

// TestSweepJobOwnerOnly: SweepJob leaves entries of other users alone,
// whatever their name.
func TestSweepJobOwnerOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create files as a second user (nobody)")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777|os.ModeSticky)
	os.Chmod(filepath.Dir(dir), 0o755)
	t.Setenv("DPML_SHM_DIR", dir)
	os.WriteFile(filepath.Join(dir, "dpml-tok123-mine"), nil, 0o600)
	asNobody(t, "touch", filepath.Join(dir, "dpml-tok123-theirs"))
	removed := SweepJob("tok123")
	if !slices.Equal(removed, []string{filepath.Join(dir, "dpml-tok123-mine")}) {
		t.Errorf("removed %v", removed)
	}
	if _, err := os.Lstat(filepath.Join(dir, "dpml-tok123-theirs")); err != nil {
		t.Errorf("another user's file was removed: %v", err)
	}
}
