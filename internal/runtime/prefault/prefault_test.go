package prefault

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// smaps returns, from /proc/self/smaps, the summed Size and Rss (KiB) of
// the mappings that pass keep(start address, perms, path).
func smaps(t *testing.T, keep func(lo uint64, perms, path string) bool) (size, rss int64) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			lo, err := strconv.ParseUint(strings.SplitN(fs[0], "-", 2)[0], 16, 64)
			path := ""
			if len(fs) >= 6 {
				path = fs[5]
			}
			in = err == nil && keep(lo, fs[1], path)
			continue
		}
		if in && len(fs) == 3 && (fs[0] == "Size:" || fs[0] == "Rss:") {
			v, _ := strconv.ParseInt(fs[1], 10, 64)
			if fs[0] == "Size:" {
				size += v
			} else {
				rss += v
			}
		}
	}
	return size, rss
}

// TestPopulate: a file mapped but never read has no page in the page
// tables; Populate maps all of them. The oracle is the kernel's Rss of
// the mapping. Mutation: Populate doing nothing -> "Rss 0 of 256 KiB".
func TestPopulate(t *testing.T) {
	const size = 256 << 10
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	at := uint64(uintptr(unsafe.Pointer(&b[0])))
	mine := func(lo uint64, _, _ string) bool { return lo == at }
	if s, r := smaps(t, mine); s != size>>10 || r != 0 {
		t.Fatalf("before: Rss %d of %d KiB, want 0 of %d", r, s, size>>10)
	}
	Populate(b)
	if s, r := smaps(t, mine); r != s || s != size>>10 {
		t.Fatalf("after Populate: Rss %d of %d KiB, want all %d", r, s, size>>10)
	}
}

// TestSelf: Self finds this test binary's read-only segments and they
// are in the page tables afterwards (Rss of the executable's read-only
// mappings at least 99% of their size, an oracle of the kernel's), and
// only the first call does the work. Mutation: dpml_prefault_phdr
// matching no object -> "Self mapped in 0 bytes".
func TestSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	n, _, first := Self()
	if n <= 0 || !first {
		t.Fatalf("Self mapped in %d bytes (first call %v), want some on the first call", n, first)
	}
	if n2, _, again := Self(); again || n2 != n {
		t.Errorf("a second Self did the work again (%v) or reports %d bytes, not %d", again, n2, n)
	}
	ro := func(_ uint64, perms, path string) bool { return path == exe && perms[0] == 'r' && perms[1] == '-' }
	size, rss := smaps(t, ro)
	if size == 0 || rss*100 < size*99 || n>>10 > size {
		t.Errorf("the executable's read-only mappings: Rss %d of %d KiB after Self mapped in %d KiB; want at least 99%%, and no more than their size", rss, size, n>>10)
	}
}
