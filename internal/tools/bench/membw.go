package bench

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// STREAM byte counts per element (float64): copy reads one array and
// writes one, triad reads two and writes one. Write-allocate traffic is not
// counted, as in STREAM.
const (
	CopyBytesPerElem  = 16
	TriadBytesPerElem = 24
)

// DefaultMemBWBytes is the default array size per rank: large enough to
// defeat any last-level cache when several ranks run at once.
const DefaultMemBWBytes = 64 << 20

// MemBWArrays are one worker's arrays.
type MemBWArrays struct{ A, B, C []float64 }

// NewMemBWArrays allocates and touches three arrays of bytes each (so the
// pages are mapped before timing).
func NewMemBWArrays(bytes int) MemBWArrays {
	n := max(bytes/8, 1)
	m := MemBWArrays{A: make([]float64, n), B: make([]float64, n), C: make([]float64, n)}
	for i := range m.A {
		m.A[i] = 1
		m.B[i] = 2
		m.C[i] = 0
	}
	return m
}

// Copy runs C = A and returns the bytes moved.
func (m MemBWArrays) Copy() int {
	copy(m.C, m.A)
	return CopyBytesPerElem * len(m.A)
}

// Triad runs A = B + s*C and returns the bytes moved.
func (m MemBWArrays) Triad(s float64) int {
	a, b, c := m.A, m.B[:len(m.A)], m.C[:len(m.A)]
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a[i] = b[i] + s*c[i]
		a[i+1] = b[i+1] + s*c[i+1]
		a[i+2] = b[i+2] + s*c[i+2]
		a[i+3] = b[i+3] + s*c[i+3]
	}
	for ; i < len(a); i++ {
		a[i] = b[i] + s*c[i]
	}
	return TriadBytesPerElem * len(a)
}

// GBs converts bytes over seconds to GB/s (10^9 bytes per second).
func GBs(bytes, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return bytes / seconds / 1e9
}

// ThreadedMemBW runs the copy and triad kernels on threads goroutines, each
// locked to an OS thread and owning arrays of bytes each, started together
// for each of reps repetitions; it returns the best aggregate copy and triad
// bandwidths in GB/s (total bytes over the slowest thread's time).
func ThreadedMemBW(threads, bytes, reps int) (copyGBs, triadGBs float64, err error) {
	if threads < 1 || reps < 1 {
		return 0, 0, fmt.Errorf("membw: threads %d and reps %d must be >= 1", threads, reps)
	}
	type job struct {
		kernel int // 0 copy, 1 triad
		done   chan<- float64
	}
	var wg sync.WaitGroup
	jobs := make([]chan job, threads)
	ready := make(chan struct{}, threads)
	for t := range jobs {
		jobs[t] = make(chan job)
		wg.Add(1)
		go func(in <-chan job) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			m := NewMemBWArrays(bytes)
			ready <- struct{}{}
			for j := range in {
				t0 := time.Now()
				if j.kernel == 0 {
					m.Copy()
				} else {
					m.Triad(3)
				}
				j.done <- time.Since(t0).Seconds()
			}
		}(jobs[t])
	}
	for range threads {
		<-ready
	}
	n := max(bytes/8, 1)
	var best [2]float64
	for rep := 0; rep < reps; rep++ {
		for k := 0; k < 2; k++ {
			done := make(chan float64, threads)
			for _, c := range jobs {
				c <- job{kernel: k, done: done}
			}
			slowest := 0.0
			for range threads {
				slowest = max(slowest, <-done)
			}
			per := CopyBytesPerElem
			if k == 1 {
				per = TriadBytesPerElem
			}
			best[k] = max(best[k], GBs(float64(per*n*threads), slowest))
		}
	}
	for _, c := range jobs {
		close(c)
	}
	wg.Wait()
	return best[0], best[1], nil
}
