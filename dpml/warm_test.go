package dpml

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// mappingRSS returns the resident kilobytes of this process's mapping
// that starts at addr, from /proc/self/smaps (the kernel's count of the
// pages in this process's page tables).
func mappingRSS(t *testing.T, addr uintptr) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	want := fmt.Sprintf("%x-", addr)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(l, want)
			continue
		}
		if in && strings.HasPrefix(l, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(l)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping at %#x in /proc/self/smaps", addr)
	return 0
}

// TestWarm: Warm maps the node segment's data area into every rank's page
// tables (the mapping's resident size, read from the kernel, covers the
// whole segment afterwards, where setup maps only the flag lines), runs
// calls the tuner never sees (no key has a recorded call), and leaves the
// communicator working: the calls after it are right; and it prints
// nothing at DPML_VERBOSE=1 but the size of the code it mapped in. Mutations: Warm without the second Populate
// -> the resident size stays near one share; Warm through Allreduce (the
// tuner's path) -> keys with calls; Warm keeping the verbose level -> its
// plans printed.
func TestWarm(t *testing.T) {
	for _, lay := range [][2]int{{1, 4}, {2, 2}} {
		t.Run(fmt.Sprintf("%dx%d", lay[0], lay[1]), func(t *testing.T) {
			mpitest.Run(t, lay[0], lay[1], func(t *testing.T, w *mpi.Comm) {
				c, err := New(w, WithSegmentBytes(256<<10))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				b := c.seg.mem.Bytes()
				addr := uintptr(unsafe.Pointer(&b[0]))
				before := mappingRSS(t, addr)
				// At DPML_VERBOSE=1 a plan's first call prints it: Warm's
				// calls are not the program's and print nothing.
				c.verbose = 1
				r, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				stderr := os.Stderr
				os.Stderr = pw
				werr := c.Warm()
				os.Stderr = stderr
				pw.Close()
				printed, _ := io.ReadAll(r)
				c.verbose = 0
				if werr != nil {
					t.Fatal(werr)
				}
				// The one line it may print is its own: the code pages
				// it mapped in (once per process).
				var other []string
				for _, l := range strings.Split(strings.TrimSpace(string(printed)), "\n") {
					if l != "" && !strings.HasPrefix(l, "dpml: rank 0: mapped in ") {
						other = append(other, l)
					}
				}
				if len(other) > 0 {
					t.Errorf("Warm printed at DPML_VERBOSE=1:\n%s", strings.Join(other, "\n"))
				}
				after := mappingRSS(t, addr)
				if total := len(b) >> 10; after < total {
					t.Errorf("segment of %d KiB: %d KiB resident before Warm, %d after, want all", total, before, after)
				}
				if c.tuner != nil {
					for _, in := range c.tuner.Infos() {
						if in.Calls > 0 {
							t.Errorf("the tuner saw Warm's calls: %v has %d", in.Key, in.Calls)
						}
					}
				}
				for n := 1; n <= 1<<18; n *= 8 {
					send, recv := make([]int32, n), make([]int32, n)
					for i := range send {
						send[i] = int32(w.Rank() + i%5)
					}
					if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
						t.Fatal(err)
					}
					s := int32(w.Size() * (w.Size() - 1) / 2)
					for i, v := range recv {
						if want := s + int32(w.Size()*(i%5)); v != want {
							t.Fatalf("%d elements: element %d = %d, want %d", n, i, v, want)
						}
					}
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if err := c.Warm(); !errors.Is(err, ErrClosed) {
					t.Errorf("Warm after Close: %v, want ErrClosed", err)
				}
			})
		})
	}
}
