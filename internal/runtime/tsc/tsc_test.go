package tsc

import (
	"testing"
	"time"
)

// Where Usable, the counter never goes back within a run of reads and
// advances across a sleep; on other architectures Usable is false.
// Mutation check: Read returning a constant fails the advance.
func TestRead(t *testing.T) {
	if !supported {
		if Usable() {
			t.Fatal("Usable on an architecture without Read")
		}
		return
	}
	if !Usable() {
		t.Skip("the counter is not a clock on this machine")
	}
	prev := Read()
	for range 10000 {
		v := Read()
		if v < prev {
			t.Fatalf("the counter went back: %d after %d", v, prev)
		}
		prev = v
	}
	a := Read()
	time.Sleep(2 * time.Millisecond)
	if b := Read(); b <= a {
		t.Fatalf("the counter did not advance over 2 ms: %d then %d", a, b)
	}
}

func TestCPUFlags(t *testing.T) {
	if cpuFlags("no-such-flag-dpml") {
		t.Error("a flag no processor has was found")
	}
}
