package shm

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestStoreRelease: a writer fills a payload with the generation, then
// raises the flag with StoreRelease; a reader that sees generation g must
// see the payload of g (or of a later generation: the writer may run ahead
// once the reader acknowledged g). Run as two goroutines on two OS threads.
func TestStoreRelease(t *testing.T) {
	const gens = 20000
	var flag, ack atomic.Uint64
	var payload [7]atomic.Uint64 // atomic only so the race detector stays quiet
	w := Waiter{Timeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() {
		for g := uint64(1); g <= gens; g++ {
			if err := w.UntilAtLeast(&ack, g-1); err != nil {
				done <- err
				return
			}
			for i := range payload {
				payload[i].Store(g)
			}
			StoreRelease(&flag, g)
		}
		done <- nil
	}()
	for g := uint64(1); g <= gens; g++ {
		if err := w.UntilAtLeast(&flag, g); err != nil {
			t.Fatalf("generation %d: %v", g, err)
		}
		for i := range payload {
			if v := payload[i].Load(); v != g {
				t.Fatalf("generation %d: payload word %d is %d", g, i, v)
			}
		}
		if v := flag.Load(); v != g {
			t.Fatalf("flag %d after generation %d", v, g)
		}
		ack.Store(g)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
