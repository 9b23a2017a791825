package mpi

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
)

func TestGoschedMode(t *testing.T) {
	for _, tc := range []struct {
		env         string
		pace, procs bool
		bad         bool
	}{
		{"", true, true, false}, // default: auto
		{"auto", true, true, false},
		{"pace", true, false, false},
		{"procs", false, true, false},
		{"off", false, false, false},
		{"yes", false, false, true},
		{"on", false, false, true},
	} {
		t.Setenv(config.GoSched, tc.env)
		_, pace, procs, err := goschedMode()
		if tc.bad {
			if !errors.Is(err, ErrArg) {
				t.Errorf("%s=%q: err %v, want ErrArg", config.GoSched, tc.env, err)
			}
			continue
		}
		if err != nil || pace != tc.pace || procs != tc.procs {
			t.Errorf("%s=%q: pace %v procs %v err %v, want pace %v procs %v",
				config.GoSched, tc.env, pace, procs, err, tc.pace, tc.procs)
		}
	}
}

// withPace sets the pacing state for a test and restores it after.
func withPace(t *testing.T, on bool, every time.Duration) {
	oldOn, oldEvery, oldLast := paceOn.Load(), paceEvery.Load(), paceLast.Load()
	paceOn.Store(on)
	paceEvery.Store(int64(every))
	t.Cleanup(func() {
		paceOn.Store(oldOn)
		paceEvery.Store(oldEvery)
		paceLast.Store(oldLast)
	})
}

// pace yields when due, and only then: a goroutine started just before
// runs during a due pace (one P), not during one that is not due or with
// pacing off.
func TestPaceYieldsWhenDue(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ran := func(f func()) bool {
		var flag atomic.Bool
		done := make(chan struct{})
		go func() { flag.Store(true); close(done) }()
		f()
		got := flag.Load()
		<-done
		return got
	}

	withPace(t, true, 0) // always due
	y := paceYields.Load()
	if !ran(pace) {
		t.Error("a due pace did not let another goroutine run")
	}
	if paceYields.Load() != y+1 {
		t.Errorf("yields %d, want %d", paceYields.Load(), y+1)
	}

	paceEvery.Store(int64(time.Hour)) // never due again
	paceLast.Store(int64(time.Since(paceEpoch)))
	y = paceYields.Load()
	if ran(pace) {
		t.Error("a pace that was not due let another goroutine run")
	}
	if paceYields.Load() != y {
		t.Error("a pace that was not due counted a yield")
	}

	withPace(t, false, 0) // off: never yields
	if ran(pace) || paceYields.Load() != y {
		t.Error("pace yielded with pacing off")
	}
}

// Pace is due again once the interval has passed since the last yield,
// on the monotonic clock.
func TestPaceInterval(t *testing.T) {
	withPace(t, true, time.Hour)
	paceLast.Store(int64(time.Since(paceEpoch)))
	y := paceYields.Load()
	pace()
	if paceYields.Load() != y {
		t.Fatal("yielded before the interval had passed")
	}
	paceEvery.Store(int64(20 * time.Millisecond))
	time.Sleep(30 * time.Millisecond)
	pace()
	if paceYields.Load() != y+1 {
		t.Fatal("did not yield after the interval had passed")
	}
}

func TestPaceDoesNotAllocate(t *testing.T) {
	withPace(t, true, 0)
	if a := testing.AllocsPerRun(100, pace); a != 0 {
		t.Errorf("pace allocates %v", a)
	}
}
