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
//
// One observation proves nothing either way, so each verdict takes five:
// a goroutine can also run because the runtime preempted this one (sysmon
// preempts a goroutine whose OS thread the kernel has kept off the CPU
// for 10 ms, which an oversubscribed machine does at any instruction), and
// a Gosched puts the caller on the global run queue, which schedule()
// takes before the local one once every 61 scheduler ticks (so a due
// pace runs the caller again at once about 1 time in 61; the test failed
// so 47 times in 3000 runs). Either lets one observation of five go the
// wrong way; a pace that yields when it should not, or not when it
// should, turns all five. The yield counts are exact.
//
// Mutation check: without the runtime.Gosched() in pace, the due case
// sees the goroutine run 0 times of 5; with the Gosched before the
// interval check, the not-due case sees it run 5 times of 5.
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
	const tries = 5
	runs := func(f func()) int {
		n := 0
		for range tries {
			if ran(f) {
				n++
			}
		}
		return n
	}

	withPace(t, true, 0) // always due
	y := paceYields.Load()
	if n := runs(pace); n < tries-1 {
		t.Errorf("a due pace let another goroutine run %d times of %d", n, tries)
	}
	if paceYields.Load() != y+tries {
		t.Errorf("yields %d, want %d", paceYields.Load(), y+tries)
	}

	paceEvery.Store(int64(time.Hour)) // never due again
	paceLast.Store(int64(time.Since(paceEpoch)))
	y = paceYields.Load()
	if n := runs(pace); n > 1 {
		t.Errorf("a pace that was not due let another goroutine run %d times of %d", n, tries)
	}
	if paceYields.Load() != y {
		t.Error("a pace that was not due counted a yield")
	}

	withPace(t, false, 0) // off: never yields
	if n := runs(pace); n > 1 || paceYields.Load() != y {
		t.Errorf("pace yielded with pacing off (another goroutine ran %d times of %d, %d yields counted)", n, tries, paceYields.Load()-y)
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
