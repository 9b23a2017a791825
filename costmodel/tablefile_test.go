package costmodel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func tableWith(cmd string, entries ...Entry) *Table {
	return &Table{Schema: SchemaVersion, Provenance: Provenance{Command: cmd}, Entries: entries}
}

var (
	entryA = Entry{Elem: "float32", Op: "arith", Log2Bytes: 10, Nodes: 2, PPN: 2, Variant: "dpml", Leaders: 1, Pipeline: 1, State: "frozen"}
	entryB = Entry{Elem: "float64", Op: "arith", Log2Bytes: 20, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 2, Pipeline: 1, Offload: "sharp", State: "frozen"}
)

func readBack(t *testing.T, path string) *Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestWriteTableFile: what a save does with each thing it may find at the
// table's name.
func TestWriteTableFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir, path string) // what is at path before the save
		refuse  string                               // the error must say this (and the file stays)
		entries int                                  // else: entries in the saved table
		mode    os.FileMode                          // and its mode (0: not checked)
	}{
		{name: "new file", setup: func(*testing.T, string, string) {}, entries: 1},
		{name: "existing 0640 table, other keys kept", setup: func(t *testing.T, _, path string) {
			writeTable(t, path, tableWith("old", entryB))
			os.Chmod(path, 0o640)
		}, entries: 2, mode: 0o640},
		{name: "existing table, same key replaced", setup: func(t *testing.T, _, path string) {
			writeTable(t, path, tableWith("old", entryA))
		}, entries: 1},
		{name: "empty file", setup: func(t *testing.T, _, path string) { os.WriteFile(path, nil, 0o600) }, entries: 1, mode: 0o600},
		{name: "symbolic link to a file", setup: func(t *testing.T, dir, path string) {
			os.WriteFile(filepath.Join(dir, "target"), []byte("target\n"), 0o644)
			os.Symlink("target", path)
		}, refuse: "is a symbolic link"},
		{name: "dangling symbolic link", setup: func(t *testing.T, dir, path string) {
			os.Symlink(filepath.Join(dir, "nothing-yet"), path)
		}, refuse: "is a symbolic link"},
		{name: "FIFO", setup: func(t *testing.T, _, path string) { syscall.Mkfifo(path, 0o644) }, refuse: "is a FIFO, not a regular file"},
		{name: "directory", setup: func(t *testing.T, _, path string) { os.Mkdir(path, 0o755) }, refuse: "is a directory, not a regular file"},
		{name: "not a table any more", setup: func(t *testing.T, _, path string) {
			os.WriteFile(path, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
		}, refuse: "now holds something else than a tuning table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "table.json")
			tc.setup(t, dir, path)
			before, _ := os.Lstat(path)
			err := WriteTableFile(path, tableWith("new", entryA))
			if tc.refuse != "" {
				if err == nil || !errors.Is(err, ErrTableFile) || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("%v; want ErrTableFile saying %q", err, tc.refuse)
				}
				after, _ := os.Lstat(path)
				if !os.SameFile(before, after) || before.ModTime() != after.ModTime() {
					t.Errorf("the refused file was replaced or changed")
				}
				if b, err := os.ReadFile(filepath.Join(dir, "target")); err == nil && string(b) != "target\n" {
					t.Errorf("the link's target was written: %q", b)
				}
				if _, err := os.Stat(filepath.Join(dir, "nothing-yet")); err == nil {
					t.Errorf("the dangling link's target was created")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				tb := readBack(t, path)
				if len(tb.Entries) != tc.entries || tb.Provenance.Command != "new" {
					t.Errorf("saved %d entries (provenance %q), want %d", len(tb.Entries), tb.Provenance.Command, tc.entries)
				}
				if st, _ := os.Stat(path); tc.mode != 0 && st.Mode().Perm() != tc.mode {
					t.Errorf("mode %v, want %v", st.Mode().Perm(), tc.mode)
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".dpml-tuning-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

func writeTable(t *testing.T, path string, tb *Table) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteTableFileConcurrent: saves racing with each other and with a
// reader never leave a partial table at the name: every read parses, and
// keys no writer dropped stay.
func TestWriteTableFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.json")
	writeTable(t, path, tableWith("start", entryA))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 3)
	for _, en := range []Entry{entryA, entryB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				if err := WriteTableFile(path, tableWith("writer", en)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	reads := 0
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			f, err := os.Open(path)
			if err != nil {
				errs <- err
				return
			}
			_, err = ReadTable(f)
			f.Close()
			if err != nil {
				errs <- err
				return
			}
			reads++
		}
	}()
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every version holds entryA (the first table and each save keep
	// the keys they read); entryB is there unless a save of A that had
	// read the file before B's first rename came last.
	tb := readBack(t, path)
	if len(tb.Entries) == 0 || idOf(&tb.Entries[0]) != idOf(&entryA) {
		t.Errorf("final table %+v lacks entryA", tb.Entries)
	}
	t.Logf("%d reads during the saves", reads)
}

// TestCheckTableFile: what setup refuses before a run.
func TestCheckTableFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	os.Symlink("file", filepath.Join(dir, "link"))
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "new.json"), ""},
		{filepath.Join(dir, "file"), ""},
		{filepath.Join(dir, "missing", "t.json"), "no such file or directory"},
		{filepath.Join(dir, "file", "t.json"), "is not a directory"},
		{filepath.Join(dir, "link"), "is a symbolic link"},
		{dir, "is a directory, not a regular file"},
	} {
		err := CheckTableFile(tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrTableFile) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want ErrTableFile saying %q", tc.path, err, tc.want)
		}
	}
}
