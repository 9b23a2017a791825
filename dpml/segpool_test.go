package dpml

import (
	"os"
	"testing"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestSegmentPool (1x4): a closed communicator's node segment is taken by
// a later communicator of the same local ranks, in whatever order, with
// its flags back at generation 0 (every result right); a communicator of
// other ranks with the same count creates its own (the pool's offers are
// refused, nothing is left reserved); the pool never holds more than
// segPoolMax segments, and none with DPML_SEGMENT_POOL=0. Each communicator reduces other data than the one
// before it, so stale flags would hand out stale results. Mutations: the
// head not clearing the control lines -> "call 0, 1 elements: element 0 =
// 3007, want 4007"; an offer taken where some rank does not hold it (OR
// of the ranks' masks, not AND) -> ranks 2-3 dereference a nil mapping.
func TestSegmentPool(t *testing.T) {
	mpitest.Run(t, 1, 4, func(t *testing.T, w *mpi.Comm) {
		r := w.Rank()
		round := int64(0)
		use := func(color, key int) {
			t.Helper()
			sub, err := w.Split(color, key)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Free()
			c, err := New(sub, WithSegmentBytes(64<<10))
			if err != nil {
				t.Fatal(err)
			}
			round++ // each communicator's data differs from the one before's
			for i := range 50 {
				n := []int{1, 300, 5000}[i%3]
				send, recv := make([]int64, n), make([]int64, n)
				for j := range send {
					send[j] = int64(sub.Rank()*7+j%5) + 1000*round
				}
				if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
					t.Fatal(err)
				}
				s := int64(sub.Size())
				for j, v := range recv {
					if want := 7*s*(s-1)/2 + s*int64(j%5) + 1000*round*s; v != want {
						t.Fatalf("call %d, %d elements: element %d = %d, want %d", i, n, j, v, want)
					}
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		hits0, misses0 := segPool.hits.Load(), segPool.misses.Load()
		use(r/2, r)  // {0,1} and {2,3}: new segments
		use(r/2, -r) // the same ranks reversed: each takes its pair's
		use(r%2, r)  // {0,2} and {1,3}: nobody holds the other's
		use(r/2, r)  // {0,1} and {2,3} again: their segment is still pooled
		hits := segPool.hits.Load() - hits0
		misses := segPool.misses.Load() - misses0
		if hits != 2 || misses != 1 {
			t.Errorf("rank %d: hits %d, misses %d; want 2 and 1", r, hits, misses)
		}
		segPool.mu.Lock()
		n := len(segPool.e)
		reserved := 0
		for _, e := range segPool.e {
			if e.reserved {
				reserved++
			}
		}
		segPool.mu.Unlock()
		if n > segPoolMax || reserved != 0 {
			t.Errorf("rank %d: %d pooled (at most %d), %d reserved", r, n, segPoolMax, reserved)
		}
		// DPML_SEGMENT_POOL=0: the next communicator still takes its
		// pooled segment, but nothing is kept at its Close, and the one
		// after it makes a new segment.
		os.Setenv(config.SegmentPool, "0")
		defer os.Unsetenv(config.SegmentPool)
		hits0 = segPool.hits.Load()
		use(r/2, r)
		segPool.mu.Lock()
		n = len(segPool.e)
		segPool.mu.Unlock()
		use(r/2, r)
		if got := segPool.hits.Load() - hits0; got != 1 || n != 0 {
			t.Errorf("rank %d, DPML_SEGMENT_POOL=0: %d segments kept, hits %d; want 0 and 1", r, n, got)
		}
	})
}
