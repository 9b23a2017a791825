package shm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestLifecycle(t *testing.T) {
	tests := []struct {
		name  string
		store Store
		size  int
	}{
		{"one byte", Store{}, 1},
		{"one page", Store{}, 4096},
		{"page plus one", Store{}, 4097},
		{"1 MiB", Store{}, 1 << 20},
		{"256 MiB", Store{}, 256 << 20},
		{"explicit dir", Store{Dir: DefaultDir}, 8192},
		{"non-tmpfs dir", Store{Dir: t.TempDir()}, 3 * 4096},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := newName(t)
			s, err := tc.store.Create(name, tc.size)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.Created() || s.Name() != name || s.Size() != tc.size {
				t.Fatalf("Created=%v Name=%q Size=%d", s.Created(), s.Name(), s.Size())
			}
			if want := filepath.Join(tc.store.dir(), name); s.Path() != want || !exists(want) {
				t.Fatalf("Path=%q, want existing %q", s.Path(), want)
			}
			b := s.Bytes()
			if len(b) != tc.size {
				t.Fatalf("len(Bytes) = %d, want %d", len(b), tc.size)
			}
			if uintptr(unsafe.Pointer(&b[0]))%4096 != 0 {
				t.Fatalf("mapping not page aligned")
			}
			if b[0] != 0 || b[len(b)-1] != 0 {
				t.Fatalf("new segment not zeroed")
			}
			b[len(b)-1] = 0x5a
			b[0] = 0xa5

			o, err := tc.store.Open(name, tc.size)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if o.Created() {
				t.Fatal("opened handle claims to have created the segment")
			}
			ob := o.Bytes()
			if ob[0] != 0xa5 || len(ob) > 1 && ob[len(ob)-1] != 0x5a {
				t.Fatal("second mapping does not see the first one's writes")
			}

			// The engine's order: everyone opened, then the creator unlinks.
			if err := s.Unlink(); err != nil {
				t.Fatal(err)
			}
			if exists(s.Path()) {
				t.Fatal("file still exists after Unlink")
			}
			if err := s.Unlink(); err != nil {
				t.Fatalf("second Unlink: %v", err)
			}
			if err := o.Unlink(); err != nil {
				t.Fatalf("Unlink of an already removed name: %v", err)
			}
			// Mappings survive the unlink.
			ob[0] = 7
			if b[0] != 7 {
				t.Fatal("mappings stopped sharing after Unlink")
			}
			if _, err := tc.store.Open(name, tc.size); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Open after Unlink: err = %v, want ErrNotExist", err)
			}
			for i, h := range []*Segment{o, s, o, s} {
				if err := h.Close(); err != nil {
					t.Fatalf("Close #%d: %v", i, err)
				}
			}
			if s.Bytes() != nil || o.Bytes() != nil {
				t.Fatal("Bytes not nil after Close")
			}
		})
	}
}

func TestCloseUnlinksOnlyIfCreator(t *testing.T) {
	name := newName(t)
	s, err := Create(name, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := Open(name, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(s.Path()) {
		t.Fatal("closing an opened handle removed the name")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(s.Path()) {
		t.Fatal("closing the creating handle left the name")
	}
}

func TestCreateErrors(t *testing.T) {
	existing := mustCreate(t, 4096)
	tests := []struct {
		name   string
		seg    string
		size   int
		is     error // want errors.Is(err, is) when non-nil
		noFile bool  // the path must not exist afterwards
	}{
		{"existing name", existing.Name(), 4096, fs.ErrExist, false},
		{"existing name, other size", existing.Name(), 8192, fs.ErrExist, false},
		{"absurd size", newName(t), 1 << 60, nil, true},
		{"zero size", newName(t), 0, nil, true},
		{"negative size", newName(t), -1, nil, true},
		{"slash", "a/b", 4096, nil, false},
		{"empty", "", 4096, nil, false},
		{"dotdot", "..", 4096, nil, false},
		{"too long", strings.Repeat("x", 256), 4096, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Create(tc.seg, tc.size)
			if err == nil {
				s.Close()
				t.Fatal("Create succeeded")
			}
			t.Logf("error: %v", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v is not %v", err, tc.is)
			}
			if tc.noFile && exists(filepath.Join(DefaultDir, tc.seg)) {
				t.Fatal("failed Create left the file behind")
			}
		})
	}
	if !exists(existing.Path()) {
		t.Fatal("failed Create of an existing name removed it")
	}
}

func TestOpenErrors(t *testing.T) {
	s := mustCreate(t, 8192)
	dir := filepath.Join(DefaultDir, newName(t))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	tests := []struct {
		name string
		seg  string
		size int
		is   error
	}{
		{"missing", newName(t), 4096, fs.ErrNotExist},
		{"smaller size", s.Name(), 4096, nil},
		{"larger size", s.Name(), 16384, nil},
		{"zero size", s.Name(), 0, nil},
		{"directory", filepath.Base(dir), 4096, nil},
		{"slash", "x/" + s.Name(), 8192, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Open(tc.seg, tc.size)
			if err == nil {
				o.Close()
				t.Fatal("Open succeeded")
			}
			t.Logf("error: %v", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestTwoMappingsShareFlags(t *testing.T) {
	s := mustCreate(t, 2*CacheLine)
	o1, err := Open(s.Name(), s.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer o1.Close()
	o2, err := Open(s.Name(), s.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	a := Uint64At(o1.Bytes(), CacheLine)
	b := Uint64At(o2.Bytes(), CacheLine)
	if a == b {
		t.Fatal("two Opens returned the same mapping")
	}
	a.Store(42)
	if got := b.Load(); got != 42 {
		t.Fatalf("other mapping sees %d, want 42", got)
	}
	b.Add(1)
	if got := Uint64At(s.Bytes(), CacheLine).Load(); got != 43 {
		t.Fatalf("creator mapping sees %d, want 43", got)
	}
}

func TestName(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n, err := Name("pfx")
		if err != nil {
			t.Fatal(err)
		}
		if len(n) != len("pfx-")+16 || !strings.HasPrefix(n, "pfx-") || seen[n] {
			t.Fatalf("bad or repeated name %q", n)
		}
		for _, c := range n[4:] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				t.Fatalf("name %q: non-hex suffix", n)
			}
		}
		seen[n] = true
	}
	for _, bad := range []string{"", "a/b", "/", "x\x00", strings.Repeat("p", 250)} {
		if n, err := Name(bad); err == nil {
			t.Errorf("Name(%q) = %q, want error", bad, n)
		}
	}
}

func TestSweep(t *testing.T) {
	tests := []struct {
		name  string
		store Store
	}{
		{"default dir", Store{}},
		{"temp dir", Store{Dir: t.TempDir()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pfx := testPrefix + "sweep"
			other := testPrefix + "keep"
			var victims []string
			for range 3 {
				s, err := tc.store.Create(func() string { n, _ := Name(pfx); return n }(), 4096)
				if err != nil {
					t.Fatal(err)
				}
				victims = append(victims, s.Name())
				defer s.Close() // mapping stays valid after the sweep
			}
			plain := pfx + "plainfile" // not made by Create: still matched
			if err := os.WriteFile(filepath.Join(tc.store.dir(), plain), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			victims = append(victims, plain)
			keep, err := tc.store.Create(func() string { n, _ := Name(other); return n }(), 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer keep.Close()
			subdir := filepath.Join(tc.store.dir(), pfx+"dir") // directories are left alone
			if err := os.Mkdir(subdir, 0o700); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(subdir)

			removed, err := tc.store.Sweep(pfx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, r := range removed {
				got[r] = true
			}
			if len(removed) != len(victims) {
				t.Fatalf("removed %v, want %v", removed, victims)
			}
			for _, v := range victims {
				if !got[v] || exists(filepath.Join(tc.store.dir(), v)) {
					t.Fatalf("%s not swept (removed %v)", v, removed)
				}
			}
			if !exists(keep.Path()) || !exists(subdir) {
				t.Fatal("Sweep removed a non-matching entry")
			}
			if again, err := tc.store.Sweep(pfx); err != nil || len(again) != 0 {
				t.Fatalf("second Sweep: %v, %v", again, err)
			}
		})
	}
	for _, bad := range []string{"", "a/b"} {
		if _, err := Sweep(bad); err == nil {
			t.Errorf("Sweep(%q) succeeded", bad)
		}
	}
	if _, err := (Store{Dir: filepath.Join(t.TempDir(), "missing")}).Sweep("x"); err == nil {
		t.Error("Sweep of a missing directory succeeded")
	}
}

func TestPadTo(t *testing.T) {
	tests := []struct{ off, align, want int }{
		{0, 64, 0}, {1, 64, 64}, {63, 64, 64}, {64, 64, 64}, {65, 64, 128},
		{5, 1, 5}, {7, 8, 8}, {10, 6, 12}, {-1, 8, 0}, {-9, 8, -8},
	}
	for _, tc := range tests {
		if got := PadTo(tc.off, tc.align); got != tc.want {
			t.Errorf("PadTo(%d, %d) = %d, want %d", tc.off, tc.align, got, tc.want)
		}
	}
	for _, align := range []int{0, -8} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("PadTo(1, %d) did not panic", align)
				}
			}()
			PadTo(1, align)
		}()
	}
}

func TestUint64At(t *testing.T) {
	s := mustCreate(t, 4096)
	b := s.Bytes()
	tests := []struct {
		name string
		b    []byte
		off  int
		ok   bool
	}{
		{"first", b, 0, true},
		{"cache line", b, CacheLine, true},
		{"last", b, 4096 - 8, true},
		{"misaligned", b, 4, false},
		{"misaligned slice", b[1:], 7, true}, // &b[1][7] == &b[8]
		{"past end", b, 4096, false},
		{"straddles end", b, 4096 - 4, false},
		{"negative", b, -8, false},
		{"empty", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Uint64AtChecked(tc.b, tc.off)
			if (err == nil) != tc.ok {
				t.Fatalf("Uint64AtChecked: err = %v, want ok=%v", err, tc.ok)
			}
			panicked := func() (r bool) {
				defer func() { r = recover() != nil }()
				Uint64At(tc.b, tc.off)
				return false
			}()
			if panicked == tc.ok {
				t.Fatalf("Uint64At panicked=%v, want %v", panicked, !tc.ok)
			}
			if tc.ok {
				p.Store(0x0102030405060708)
				if tc.b[tc.off] != 0x08 || tc.b[tc.off+7] != 0x01 { // little endian
					t.Fatalf("word not at offset: % x", tc.b[tc.off:tc.off+8])
				}
			}
		})
	}
	flags, err := Uint64sAt(b, CacheLine, CacheLine, 4)
	if err != nil || len(flags) != 4 {
		t.Fatal(err)
	}
	flags[3].Store(9)
	if Uint64At(b, 4*CacheLine).Load() != 9 {
		t.Fatal("Uint64sAt stride wrong")
	}
	if _, err := Uint64sAt(b, 0, CacheLine, 65); err == nil {
		t.Fatal("Uint64sAt past end succeeded")
	}
}

// TestUnnamedSegment: an unnamed segment has no name in its directory at
// any time, is shared through its reference while the creator holds it,
// and cannot be opened any more once the creator unlinked it.
func TestUnnamedSegment(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	a, err := st.CreateUnnamed(8192)
	if errors.Is(err, ErrUnnamedUnsupported) {
		t.Skipf("no O_TMPFILE here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if ents, _ := os.ReadDir(st.Dir); len(ents) != 0 {
		t.Fatalf("an unnamed segment shows in its directory: %v", ents)
	}
	if !IsRef(a.Ref()) {
		t.Fatalf("Ref %q is not a reference", a.Ref())
	}
	for _, tc := range []struct {
		ref  string
		size int
		ok   bool
	}{
		{a.Ref(), 8192, true},
		{a.Ref(), 4096, false},        // the size must match
		{a.Ref() + "/x", 8192, false}, // not a reference
		{"/proc/self/fd/0", 8192, false},
	} {
		b, err := st.OpenRef(tc.ref, tc.size)
		if (err == nil) != tc.ok {
			t.Errorf("OpenRef(%q, %d): %v, want ok=%v", tc.ref, tc.size, err, tc.ok)
		}
		if err == nil {
			a.Bytes()[100] = 42
			if b.Bytes()[100] != 42 {
				t.Error("the mappings do not share memory")
			}
			b.Close()
		}
	}
	ref := a.Ref()
	if err := a.Unlink(); err != nil {
		t.Fatal(err)
	}
	if b, err := st.OpenRef(ref, 8192); err == nil {
		b.Close()
		t.Error("the segment could still be opened after Unlink")
	}
	if a.Bytes()[100] != 42 {
		t.Error("the creator's mapping lost its memory at Unlink")
	}
}

// TestSparse: a Sparse store's segments have no blocks allocated when
// created (st_blocks from the kernel, the oracle), named and unnamed
// alike, and get them where they are first touched; a store without
// Sparse allocates every block at once; a Sparse segment larger than the
// file system's free space is refused at creation.
func TestSparse(t *testing.T) {
	const size = 64 << 10
	blocks := func(t *testing.T, s *Segment) int64 {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(s.Ref(), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	for _, unnamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("unnamed=%v", unnamed), func(t *testing.T) {
			create := func(st Store, size int) (*Segment, error) {
				if unnamed {
					return st.CreateUnnamed(size)
				}
				return st.Create(fmt.Sprintf("sparse-%d", os.Getpid()), size)
			}
			dir := t.TempDir()
			s, err := create(Store{Dir: dir, Sparse: true}, size)
			if err != nil {
				t.Fatal(err)
			}
			if b := blocks(t, s); b != 0 {
				t.Errorf("sparse segment has %d bytes allocated, want 0", b)
			}
			s.Bytes()[size/2] = 1
			if b := blocks(t, s); b == 0 || b >= size {
				t.Errorf("after touching one byte %d bytes allocated, want one page's", b)
			}
			s.Close()
			e, err := create(Store{Dir: dir}, size)
			if err != nil {
				t.Fatal(err)
			}
			if b := blocks(t, e); b < size {
				t.Errorf("a store without Sparse allocated %d bytes, want >= %d", b, size)
			}
			e.Close()
			var fs unix.Statfs_t
			if err := unix.Statfs(dir, &fs); err != nil {
				t.Fatal(err)
			}
			huge := int(min(int64(fs.Bavail)*fs.Bsize*2+size, 1<<62))
			if s, err := create(Store{Dir: dir, Sparse: true}, huge); err == nil {
				s.Close()
				t.Errorf("a sparse segment of %d bytes on a file system with %d free was created", huge, int64(fs.Bavail)*fs.Bsize)
			}
		})
	}
}
