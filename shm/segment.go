package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"
)

// DefaultDir is the directory segments live in when a Store has no Dir:
// the POSIX shared-memory tmpfs that shm_open(3) uses.
const DefaultDir = "/dev/shm"

// maxNameLen is NAME_MAX on Linux: the longest single path component.
const maxNameLen = 255

// randomHexLen is the number of random hex characters Name appends.
const randomHexLen = 16

// Store names the directory segments are created in, opened from and swept
// from. The zero Store uses DefaultDir. The package never reads the
// environment: a caller that honours an override (DPML_SHM_DIR, see config/)
// builds Store{Dir: value} itself. Tests point Dir at a private directory.
//
// A Store is a plain value; it is safe for concurrent use.
type Store struct {
	// Dir is the directory holding segment files; "" means DefaultDir.
	// It should be a tmpfs (memory-backed) for real use; any directory
	// whose file system supports shared mmap works.
	Dir string
	// Sparse: Create and CreateUnnamed size the file and check that the
	// file system has room for it, but leave its blocks unallocated:
	// they are allocated (and zeroed) where the mappings first touch
	// them. Zeroing a node segment's megabytes at once was most of a
	// communicator's setup. A file system that another process fills
	// afterwards makes a first touch fail with SIGBUS, as it would for
	// the MPI library's own shared memory.
	Sparse bool
}

func (st Store) dir() string {
	if st.Dir == "" {
		return DefaultDir
	}
	return st.Dir
}

// Create is Store{}.Create: a new segment in DefaultDir.
func Create(name string, size int) (*Segment, error) { return Store{}.Create(name, size) }

// Open is Store{}.Open: map an existing segment in DefaultDir.
func Open(name string, size int) (*Segment, error) { return Store{}.Open(name, size) }

// Sweep is Store{}.Sweep: remove leftover segments in DefaultDir.
func Sweep(prefix string) (removed []string, err error) { return Store{}.Sweep(prefix) }

// Segment is one mapped shared-memory segment. Its methods are safe for
// concurrent use, but Bytes must not be used after Close.
type Segment struct {
	mu      sync.Mutex
	name    string
	path    string
	size    int
	m       mmap.MMap // nil once closed
	created bool      // this handle created the file
	linked  bool      // created by this handle and not yet unlinked by it
	held    *os.File  // an unnamed segment's descriptor, kept until Unlink
}

// ValidateName reports whether name can be used as a segment name: non-empty,
// at most 255 bytes, no '/' or NUL, and not "." or "..".
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("shm: empty segment name")
	case len(name) > maxNameLen:
		return fmt.Errorf("shm: segment name %q longer than %d bytes", name, maxNameLen)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("shm: segment name %q contains '/' or NUL", name)
	case name == "." || name == "..":
		return fmt.Errorf("shm: invalid segment name %q", name)
	}
	return nil
}

func validatePrefix(prefix string) error {
	switch {
	case prefix == "":
		return errors.New("shm: empty prefix (would match every segment)")
	case len(prefix)+1+randomHexLen > maxNameLen:
		return fmt.Errorf("shm: prefix %q too long", prefix)
	case strings.ContainsAny(prefix, "/\x00"):
		return fmt.Errorf("shm: prefix %q contains '/' or NUL", prefix)
	}
	return nil
}

// Name returns prefix + "-" + 16 random hex characters (64 bits from
// crypto/rand), a name no other live segment uses with overwhelming
// probability. Create still uses O_EXCL, so a collision is an error, never a
// silent share. The prefix must be non-empty and must not contain '/'; the
// launcher sweeps by the same prefix.
func Name(prefix string) (string, error) {
	if err := validatePrefix(prefix); err != nil {
		return "", err
	}
	var b [randomHexLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("shm: random name: %w", err)
	}
	return prefix + "-" + hex.EncodeToString(b[:]), nil
}

// Create creates the segment dir/name of size bytes, which must not exist
// yet (O_CREAT|O_EXCL, mode 0600), reserves its memory with fallocate(2) and
// maps it shared read-write. The memory reads as zeros.
//
// Reserving the space up front means a full /dev/shm makes Create fail with
// an error wrapping ENOSPC, instead of killing the process with SIGBUS at the
// first touch of an unbacked page much later. On any failure nothing is left
// behind: the file is unlinked.
//
// The new Segment owns the name: Close unlinks it unless Unlink already did.
func (st Store) Create(name string, size int) (*Segment, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(st.dir(), name)
	if size <= 0 {
		return nil, fmt.Errorf("shm: create %s: invalid size %d", path, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: create %s (%d bytes): %w", path, size, bare(err))
	}
	m, err := func() (mmap.MMap, error) {
		defer f.Close() // the mapping keeps the memory; the fd is not needed
		if err := st.size(f, int64(size)); err != nil {
			return nil, err
		}
		m, err := mmap.MapRegion(f, size, mmap.RDWR, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("mmap: %w", err)
		}
		return m, nil
	}()
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("shm: create %s (%d bytes): %w", path, size, err)
	}
	return &Segment{name: name, path: path, size: size, m: m, created: true, linked: true}, nil
}

// CreateUnnamed creates a segment of size bytes that never has a name: a
// file opened with O_TMPFILE in the store's directory (mode 0600), its
// memory reserved and mapped as Create does. Other processes of the same
// user on the host open it with OpenRef(s.Ref(), size) while this handle
// holds the file open, that is until Unlink or Close; after that only the
// mappings keep the memory, and the kernel frees it when the last one
// goes, however the processes end. Nothing can be left behind, at any step.
//
// It fails with an error wrapping ErrUnnamedUnsupported where the
// directory's file system has no O_TMPFILE (callers then use Create).
func (st Store) CreateUnnamed(size int) (*Segment, error) {
	dir := st.dir()
	if size <= 0 {
		return nil, fmt.Errorf("shm: create in %s: invalid size %d", dir, size)
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnnamedUnsupported, dir, err)
		}
		return nil, fmt.Errorf("shm: create in %s (%d bytes): %w", dir, size, err)
	}
	f := os.NewFile(uintptr(fd), dir+"/(unnamed)")
	if err := st.size(f, int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("shm: create in %s (%d bytes): %w", dir, size, err)
	}
	m, err := mmap.MapRegion(f, size, mmap.RDWR, 0, 0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("shm: create in %s (%d bytes): mmap: %w", dir, size, err)
	}
	ref := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)
	return &Segment{name: ref, path: ref, size: size, m: m, created: true, held: f}, nil
}

// ErrUnnamedUnsupported: the directory's file system cannot create an
// unnamed file (O_TMPFILE).
var ErrUnnamedUnsupported = errors.New("shm: unnamed segments not supported")

// Ref is the path through which other processes open the segment: its
// name for a named segment, /proc/<pid>/fd/<fd> of the creator for an
// unnamed one (valid until the creator's Unlink).
func (s *Segment) Ref() string { return s.path }

// IsRef reports whether name is a reference to an unnamed segment (see
// Segment.Ref) rather than a segment name.
func IsRef(name string) bool { return strings.HasPrefix(name, "/proc/") }

// OpenRef maps the unnamed segment that ref (Segment.Ref of its creator)
// names, which must be exactly size bytes.
func (st Store) OpenRef(ref string, size int) (*Segment, error) {
	var pid, fd int
	if n, err := fmt.Sscanf(ref, "/proc/%d/fd/%d", &pid, &fd); err != nil || n != 2 || ref != fmt.Sprintf("/proc/%d/fd/%d", pid, fd) {
		return nil, fmt.Errorf("shm: open %q: not a segment reference", ref)
	}
	return openPath(ref, ref, size)
}

// bare strips the *fs.PathError around err (our messages name the path
// already); errors.Is(err, fs.ErrExist) and the like still hold.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sizeSparse makes the file size bytes without allocating its blocks,
// after checking that the file system has room for them (ENOSPC then,
// rather than SIGBUS at a first touch).
func sizeSparse(f *os.File, size int64) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err == nil && st.Bsize > 0 && int64(st.Bavail) < (size+st.Bsize-1)/st.Bsize {
		return fmt.Errorf("fallocate: %w (%d bytes free, %d needed)", unix.ENOSPC, int64(st.Bavail)*st.Bsize, size)
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("ftruncate: %w", err)
	}
	return nil
}

// size makes the new file size bytes: sparse (sizeSparse) or with every
// block allocated (reserve).
func (st Store) size(f *os.File, size int64) error {
	if st.Sparse {
		return sizeSparse(f, size)
	}
	return reserve(f, size)
}

// reserve makes the file exactly size bytes with every block allocated.
func reserve(f *os.File, size int64) error {
	fd := int(f.Fd())
	for tries := 0; ; tries++ {
		err := unix.Fallocate(fd, 0, 0, size)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR) && tries < 100:
			// tmpfs aborts a long fallocate when a signal is pending;
			// the blocks already allocated stay, so retrying is cheap.
			continue
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
			// The file system cannot preallocate (e.g. some network or
			// FUSE file systems): fall back to ftruncate. The file is then
			// sparse, and running out of space later shows up as SIGBUS
			// on first touch rather than as an error here. tmpfs (the real
			// /dev/shm) supports fallocate, so this only affects
			// overridden directories.
			if err := f.Truncate(size); err != nil {
				return fmt.Errorf("ftruncate (fallocate unsupported): %w", err)
			}
			return nil
		default:
			return fmt.Errorf("fallocate: %w", err)
		}
	}
}

// Open maps the existing segment dir/name, which must be exactly size bytes
// (a mismatch means the caller and the creator disagree on the layout, and is
// an error). The handle does not own the name: its Close only unmaps.
func (st Store) Open(name string, size int) (*Segment, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	return openPath(name, filepath.Join(st.dir(), name), size)
}

// openPath maps the segment file at path (name: the Segment's name).
func openPath(name, path string, size int) (*Segment, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: open %s: invalid size %d", path, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open %s (%d bytes): %w", path, size, bare(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm: open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("shm: open %s: not a regular file (%v)", path, fi.Mode())
	}
	if fi.Size() != int64(size) {
		return nil, fmt.Errorf("shm: open %s: size is %d bytes, want %d", path, fi.Size(), size)
	}
	m, err := mmap.MapRegion(f, size, mmap.RDWR, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open %s (%d bytes): mmap: %w", path, size, err)
	}
	return &Segment{name: name, path: path, size: size, m: m}, nil
}

// Sweep removes every regular file in the store's directory whose name
// starts with prefix and returns the names it removed. It is for the
// launcher (before and after a job) and for crash cleanup: a segment is
// only at risk of leaking between its Create and the creator's Unlink.
// Entries that vanish concurrently are not errors; other failures are
// joined into err, and the sweep carries on.
func (st Store) Sweep(prefix string) (removed []string, err error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	dir := st.dir()
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		return nil, fmt.Errorf("shm: sweep %s: %w", dir, rerr)
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("shm: sweep: %w", err))
			}
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// Bytes returns the mapping: Size bytes, page (4 KiB) aligned, shared with
// every other mapping of the segment. It is nil after Close, and must not be
// used after Close (the memory is gone: access faults).
func (s *Segment) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

// Name returns the segment's name (without the directory).
func (s *Segment) Name() string { return s.name }

// Path returns the segment's file path.
func (s *Segment) Path() string { return s.path }

// Size returns the segment's size in bytes.
func (s *Segment) Size() int { return s.size }

// Created reports whether this handle created the segment.
func (s *Segment) Created() bool { return s.created }

// Unlink removes the segment's name. The mapping, and every other process's
// mapping, stays valid; the memory is freed when the last one is unmapped.
// After the unlink no crash can leak the segment. Unlink is idempotent, and
// a name already gone (another handle unlinked it) is not an error.
func (s *Segment) Unlink() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unlinkLocked()
}

func (s *Segment) unlinkLocked() error {
	if s.held != nil {
		// An unnamed segment: its reference goes with the descriptor.
		err := s.held.Close()
		s.held = nil
		if err != nil {
			return fmt.Errorf("shm: unlink: %w", err)
		}
		return nil
	}
	if s.created && !s.linked {
		return nil
	}
	s.linked = false
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("shm: unlink: %w", err)
	}
	return nil
}

// Close unmaps the segment and, if this handle created it and has not
// unlinked it yet, removes the name too. Slices from Bytes are invalid
// afterwards. Close is idempotent.
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.created && s.linked || s.held != nil {
		if err := s.unlinkLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.m != nil {
		if err := s.m.Unmap(); err != nil {
			errs = append(errs, fmt.Errorf("shm: unmap %s: %w", s.path, err))
		}
		s.m = nil
	}
	return errors.Join(errs...)
}

// PadTo rounds off up to the next multiple of align (align > 0); it is the
// layout helper for placing flag words and buffers in a segment, e.g.
// PadTo(off, CacheLine). It panics if align <= 0 or the result overflows int.
func PadTo(off, align int) int {
	if align <= 0 {
		panic("shm: PadTo: align must be positive")
	}
	r := off % align
	if r == 0 {
		return off
	}
	if r < 0 { // negative offsets round toward +inf too
		return off - r
	}
	if off > math.MaxInt-(align-r) {
		panic("shm: PadTo: overflow")
	}
	return off + align - r
}

// Populate maps bytes [from, to) of the segment into this process's page
// tables now (MADV_POPULATE_WRITE, Linux 5.14+), so that the calls that
// first touch them do not pay a page fault per 4 KiB. The engine populates
// its control lines only: populating a whole segment took each rank of a
// node a share of the segment's pages at setup, most of which a
// communicator's calls may never touch. Older kernels refuse the advice;
// the pages then fault in on first use.
func (s *Segment) Populate(from, to int) {
	from, to = max(from, 0), min(to, len(s.m))
	if from >= to {
		return
	}
	page := os.Getpagesize()
	from -= from % page
	_ = unix.Madvise(s.m[from:to], unix.MADV_POPULATE_WRITE)
}
