package costmodel

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrTableFile: a tuning table file that cannot be read or written safely
// (a symbolic link, not a regular file, a directory that does not exist or
// is not writable, contents that are not a table).
var ErrTableFile = errors.New("costmodel: tuning table file")

// maxTableFileBytes bounds a tuning table file read back before a save.
const maxTableFileBytes = 64 << 20

// CheckTableFile checks, before a run, that WriteTableFile can save a table
// to path at its end: path's directory exists and this process may create
// files in it, and path itself is not a symbolic link (no table is ever
// written through one) nor anything else but a regular file, if it exists.
// Errors wrap ErrTableFile.
func CheckTableFile(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: the directory %s: %w", ErrTableFile, path, dir, bareErr(err))
	case !st.IsDir():
		return fmt.Errorf("%w: %s: %s is not a directory", ErrTableFile, path, dir)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("%w: %s: cannot create files in %s to save the table: %w", ErrTableFile, path, dir, err)
	}
	return checkTarget(path)
}

// checkTarget refuses a symbolic link or a non-regular file at path; a
// missing file is fine.
func checkTarget(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrTableFile, path, bareErr(err))
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link: a table is never written through one (name the file itself)", ErrTableFile, path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%w: %s is %s, not a regular file", ErrTableFile, path, FileKind(st.Mode()))
	}
	return nil
}

// WriteTableFile saves tb to path without ever writing through a name that
// someone else may have planted:
//
//   - a symbolic link or a non-regular file at path is refused (the file
//     is left as it is);
//   - the table goes to a new file in path's directory (a random name
//     created with O_CREAT|O_EXCL|O_NOFOLLOW), is synced, and is renamed
//     over path: rename replaces whatever name is there, a link planted in
//     the meantime included, and never touches a link's target; a reader
//     sees the old table or the new one, never part of one;
//   - the entries of the table already at path that tb has no entry for
//     (other layouts' or another library's entries, arms this run could
//     not use) are kept;
//   - an existing file's permission bits are kept, and its owner and group
//     where this process may set them; a new file gets 0666 less the
//     umask. A second hard link to the old file keeps the old table.
//
// Two processes saving at once each write a whole table: the later rename
// wins for the keys both wrote. Errors wrap ErrTableFile, or are the file
// system's errors.
func WriteTableFile(path string, tb *Table) error {
	if err := checkTarget(path); err != nil {
		return err
	}
	old, st, err := readExisting(path)
	if err != nil {
		return err
	}
	out := *tb
	out.Entries = append([]Entry(nil), tb.Entries...)
	if old != nil {
		have := make(map[entryID]bool, len(tb.Entries))
		for i := range tb.Entries {
			have[idOf(&tb.Entries[i])] = true
		}
		for i := range old.Entries {
			if !have[idOf(&old.Entries[i])] {
				out.Entries = append(out.Entries, old.Entries[i])
			}
		}
	}
	var buf bytes.Buffer
	if err := out.Write(&buf); err != nil {
		return err
	}
	return replaceFile(path, buf.Bytes(), st)
}

// entryID identifies an entry for the merge: its key, and the collective
// of a table of the NCCL tuner plugin.
type entryID struct {
	coll, elem, op   string
	log2, nodes, ppn int
}

func idOf(en *Entry) entryID {
	return entryID{coll: en.Coll, elem: en.Elem, op: en.Op, log2: en.Log2Bytes, nodes: en.Nodes, ppn: en.PPN}
}

// readExisting reads the table at path, opened without following a link
// and without blocking: nil, nil, nil when there is none.
func readExisting(path string) (*Table, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, nil, fmt.Errorf("%w: %s is a symbolic link: a table is never written through one (name the file itself)", ErrTableFile, path)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrTableFile, path, bareErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrTableFile, path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is %s, not a regular file", ErrTableFile, path, FileKind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTableFileBytes+1))
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrTableFile, path, err)
	case len(data) > maxTableFileBytes:
		return nil, nil, fmt.Errorf("%w: %s is larger than %d bytes: not replacing it", ErrTableFile, path, maxTableFileBytes)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, st, nil // nothing to keep
	}
	old, err := ReadTable(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s now holds something else than a tuning table, not replacing it: %w", ErrTableFile, path, err)
	}
	return old, st, nil
}

// replaceFile writes data to a new file in path's directory and renames it
// over path; st describes the file it replaces (nil: none).
func replaceFile(path string, data []byte, st fs.FileInfo) error {
	dir := filepath.Dir(path)
	var f *os.File
	var err error
	for range 100 {
		var b [8]byte
		if _, err = rand.Read(b[:]); err != nil {
			return err
		}
		name := filepath.Join(dir, ".dpml-tuning-"+hex.EncodeToString(b[:]))
		// 0666 less the umask, as a new file made by the user's tools.
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: create a file beside it: %w", ErrTableFile, path, bareErr(err))
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if st != nil {
		if err := f.Chmod(st.Mode().Perm()); err != nil {
			return err
		}
		if sys, isStat := st.Sys().(*syscall.Stat_t); isStat && (int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid()) {
			// Not permitted unless privileged: the new file is then
			// this process's, as any file it creates.
			_ = f.Chown(int(sys.Uid), int(sys.Gid))
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrTableFile, path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself on disk
		d.Close()
	}
	return nil
}

// FileKind names what a non-regular file is ("a directory", "a FIFO",
// ...), for messages about a tuning table's path.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "of type " + m.Type().String()
}

// bareErr strips the *fs.PathError around err (the messages name the path
// already); errors.Is still sees the cause.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
