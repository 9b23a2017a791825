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
	oldOn, oldEvery, oldSlot := paceOn.Load(), paceEvery.Load(), paceSlot.Load()
	paceOn.Store(on)
	paceEvery.Store(int64(every))
	t.Cleanup(func() {
		paceOn.Store(oldOn)
		paceEvery.Store(oldEvery)
		paceSlot.Store(oldSlot)
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

	paceEvery.Store(int64(time.Hour)) // not due again within the hour's slot
	paceSlot.Store(paceNow() / int64(time.Hour))
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

// Pace is due again once the clock has entered the next slot.
func TestPaceInterval(t *testing.T) {
	withPace(t, true, time.Hour)
	paceSlot.Store(paceNow() / int64(time.Hour))
	y := paceYields.Load()
	pace()
	if paceYields.Load() != y {
		t.Fatal("yielded before the slot had passed")
	}
	paceEvery.Store(int64(20 * time.Millisecond))
	time.Sleep(30 * time.Millisecond)
	pace()
	if paceYields.Load() != y+1 {
		t.Fatal("did not yield after the slot had passed")
	}
}

// The yields follow a grid on the wall clock, not the time since this
// process's last yield: a pace early in a slot yields, one later in the
// same slot does not, and the first after the next slot begins yields
// although less than the interval has passed since the last yield. So
// processes that started at different times yield in the same call.
//
// Mutation check: with pace timing PaceEvery from its last yield (the
// rule before), the pace just after the slot boundary does not yield.
func TestPaceFollowsTheGrid(t *testing.T) {
	const every = 200 * time.Millisecond
	withPace(t, true, every)
	e := int64(every)
	for try := 0; ; try++ {
		// Early in a slot (the sleep may run late: checked below).
		now := paceNow()
		time.Sleep(time.Duration((now/e+1)*e + e/10 - now))
		y := paceYields.Load()
		t0 := paceNow()
		pace()
		if paceYields.Load() != y+1 {
			t.Fatalf("no yield at the start of a new slot (%d ns into it)", t0%e)
		}
		pace()
		if got := paceNow(); got/e == t0/e && paceYields.Load() != y+1 {
			t.Fatal("a second yield in the same slot")
		}
		// Just past the next boundary.
		next := (t0/e + 1) * e
		time.Sleep(time.Duration(next + e/100 - paceNow()))
		t1 := paceNow()
		pace()
		if paceYields.Load() != y+2 {
			t.Fatalf("no yield %d ns into the next slot, %d ns after the last yield", t1-next, t1-t0)
		}
		if t1-t0 < e || try == 4 {
			// The yield came before the interval had passed since the
			// last one (on an idle machine, 90% of it): the grid's. An
			// oversubscribed machine may sleep past it 5 times; the
			// checks above held all the same.
			return
		}
	}
}

func TestPaceDoesNotAllocate(t *testing.T) {
	withPace(t, true, 0)
	if a := testing.AllocsPerRun(100, pace); a != 0 {
		t.Errorf("pace allocates %v", a)
	}
}
