package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dpmlgo/dpml/config"
)

// What a launcher killed with SIGKILL leaves behind (its session directory
// in $TMPDIR, /dev/shm/dpml-<job>*) is swept by the next start. Names in
// /tmp and /dev/shm can be planted by any user, so the sweep trusts none:
// it learns which jobs were this user's from lock files in a private state
// directory (mode 0700, owned by this user, not a symbolic link, checked
// before every use), and removes only entries owned by this user.

// stateDirName is the state directory of user uid inside $TMPDIR.
func stateDirName(uid int) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("dpmlrun-state-%d", uid))
}

// ErrStateDir: the state directory exists but is not this user's private
// directory (another user's, a link, or open to others): nothing is swept.
var ErrStateDir = errors.New("dpmlrun: state directory not private")

// stateDir returns this user's state directory, created if missing, after
// checking it is private.
func stateDir() (string, error) {
	d := stateDirName(os.Geteuid())
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%w: %s: %w", ErrStateDir, d, err)
	}
	st, err := os.Lstat(d)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %s: %w", ErrStateDir, d, err)
	case st.Mode()&fs.ModeSymlink != 0 || !st.IsDir():
		return "", fmt.Errorf("%w: %s is not a directory (%v)", ErrStateDir, d, st.Mode().Type())
	case !ownedByMe(st):
		return "", fmt.Errorf("%w: %s belongs to uid %d", ErrStateDir, d, st.Sys().(*syscall.Stat_t).Uid)
	case st.Mode().Perm() != 0o700:
		return "", fmt.Errorf("%w: %s has mode %v, want 0700", ErrStateDir, d, st.Mode().Perm())
	}
	return d, nil
}

// ownedByMe reports whether a file belongs to this process's user.
func ownedByMe(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

// markAlive records job, whose session directory is tmpBase, in the state
// directory, locked until release (or the process's death, SIGKILL
// included: the kernel drops the lock).
func markAlive(job, tmpBase string) (release func(), err error) {
	d, err := stateDir()
	if err != nil {
		return nil, err
	}
	// Locked before it gets its name, so no sweeper sees it unlocked.
	f, err := os.CreateTemp(d, ".lock-")
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	name := filepath.Join(d, job+".lock")
	if _, err := f.WriteString(tmpBase); err != nil || os.Rename(f.Name(), name) != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("record job %s in %s: %v", job, d, err)
	}
	return func() {
		os.Remove(name)
		f.Close()
	}, nil
}

// validJob reports whether s is a job token (NewJobToken's 12 hex digits).
func validJob(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// SweepStale removes what this user's jobs killed with SIGKILL left
// behind: for each job recorded in the state directory whose lock is no
// longer held, its session directory and its /dev/shm/dpml-<job>* (and
// $DPML_SHM_DIR) entries, each only if this user owns it. It returns the
// removed paths; an error (ErrStateDir) means nothing was swept.
func SweepStale() ([]string, error) {
	d, err := stateDir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		job, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || !validJob(job) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(d, e.Name())
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close()
			continue // alive
		}
		b, _ := io.ReadAll(io.LimitReader(f, 4096))
		base := string(b)
		if filepath.IsAbs(base) && strings.HasPrefix(filepath.Base(base), "dpmlrun-"+job+"-") {
			if st, err := os.Lstat(base); err == nil && st.IsDir() && ownedByMe(st) && os.RemoveAll(base) == nil {
				removed = append(removed, base)
			}
		}
		removed = append(removed, SweepJob(job)...)
		os.Remove(p)
		f.Close()
	}
	return removed, nil
}

// SweepJob removes every entry named dpml-<job>* that this user owns from
// /dev/shm and from $DPML_SHM_DIR (the engine's segment directory) when
// that is set; entries of other users are left alone whatever their name.
// It returns the paths it removed.
func SweepJob(job string) []string {
	if job == "" {
		return nil
	}
	dirs := []string{"/dev/shm"}
	if d := os.Getenv(config.ShmDir); d != "" && filepath.Clean(d) != "/dev/shm" {
		dirs = append(dirs, d)
	}
	var removed []string
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "dpml-"+job) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if st, err := os.Lstat(p); err != nil || !ownedByMe(st) {
				continue
			}
			if os.RemoveAll(p) == nil {
				removed = append(removed, p)
			}
		}
	}
	return removed
}
