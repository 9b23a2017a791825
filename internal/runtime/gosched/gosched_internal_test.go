package gosched

import (
	"errors"
	"runtime"
	"strings"
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
			if !errors.Is(err, ErrMode) {
				t.Errorf("%s=%q: err %v, want ErrMode", config.GoSched, tc.env, err)
			}
			continue
		}
		if err != nil || pace != tc.pace || procs != tc.procs {
			t.Errorf("%s=%q: pace %v procs %v err %v, want pace %v procs %v",
				config.GoSched, tc.env, pace, procs, err, tc.pace, tc.procs)
		}
	}
}

// withPace sets the pacing state for a test and restores it after; the
// clock gate starts fresh (the next pace reads the clock).
func withPace(t *testing.T, on bool, every time.Duration) {
	oldOn, oldEvery, oldSlot := paceOn.Load(), paceEvery.Load(), paceSlot.Load()
	oldLeft, oldGap, oldRead, oldNow := paceLeft.Load(), paceGap.Load(), paceRead.Load(), paceNow
	oldTSCOn, oldDeadline, oldSpan, oldCal := paceTSCOn.Load(), paceDeadline.Load(), paceSpan.Load(), paceCalNs0.Load()
	paceOn.Store(on)
	paceEvery.Store(int64(every))
	paceLeft.Store(0)
	paceGap.Store(1)
	paceTSCOn.Store(false) // the gap's gate; TestPaceTSC turns the counter's on
	paceDeadline.Store(0)
	paceCalNs0.Store(0)
	t.Cleanup(func() {
		paceTSCOn.Store(oldTSCOn)
		paceDeadline.Store(oldDeadline)
		paceSpan.Store(oldSpan)
		paceCalNs0.Store(oldCal)
		paceOn.Store(oldOn)
		paceEvery.Store(oldEvery)
		paceSlot.Store(oldSlot)
		paceLeft.Store(oldLeft)
		paceGap.Store(oldGap)
		paceRead.Store(oldRead)
		paceNow = oldNow
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

// TestPaceGrid drives pace on a fake clock, one call every us, then one
// every ms:
//   - the yields follow the wall clock's grid of PaceEvery slots, not the
//     time since this process's last yield: the first comes at the first
//     call (mid-slot), each later one at the first read of the clock after
//     a slot boundary, less than PaceEvery after the one before, so
//     processes that started at different times yield in the same call;
//   - with calls 1 us apart the clock is read once in paceMaxGap calls,
//     and a yield comes at most paceMaxGap calls after its boundary;
//   - once calls take 1 ms, after at most paceMaxGap calls the clock is
//     read at every call again, and a yield comes at the first call after
//     its boundary.
//
// Mutation checks: with pace timing PaceEvery from its last yield (the
// rule before the grid), the second yield comes PaceEvery after the
// first, past its boundary's allowance; with the gate removed (a read
// every call), the reads of the fast stretch are 20000, not at most
// 20000/3.
func TestPaceGrid(t *testing.T) {
	const every = 5 * int64(time.Millisecond)
	withPace(t, true, time.Duration(every))
	d := newPaceDriver(every)
	start, r0 := d.now, paceReads.Load()
	for range 20000 { // 20 ms of 1 us calls
		d.step(1000)
	}
	if reads := paceReads.Load() - r0; reads > 20000/3 {
		t.Errorf("%d clock reads in 20000 calls 1 us apart, want at most %d", reads, 20000/3)
	}
	if len(d.yields) == 0 || d.yields[0] != start {
		t.Fatalf("yields at %v, want the first at the first call (%d)", d.yields, start)
	}
	if len(d.yields) != 5 {
		t.Errorf("%d yields in 20 ms from 1 ms into a slot of 5 ms, want 5: %v", len(d.yields), d.yields)
	}
	d.check(t, 1, paceMaxGap*1000)
	if len(d.yields) > 1 && d.yields[1]-d.yields[0] >= every {
		t.Errorf("second yield %d ns after the first: the grid's comes less than PaceEvery (%d) after a mid-slot yield", d.yields[1]-d.yields[0], every)
	}
	// The switch leaves at most paceMaxGap calls before the next read;
	// from then on the first call after each boundary yields.
	d.longCalls(t)
}

// paceDriver calls pace on a fake clock (paceNow) and records the calls
// that yielded.
type paceDriver struct {
	every  int64
	now    int64
	yields []int64
}

// newPaceDriver starts the fake clock 1/5 into a slot far from 0.
func newPaceDriver(every int64) *paceDriver {
	d := &paceDriver{every: every, now: 1_000_000*every + every/5}
	paceNow = func() int64 { return d.now }
	return d
}

// step runs one pace at the clock's time, then moves the clock by dt.
func (d *paceDriver) step(dt int64) {
	y := paceYields.Load()
	pace()
	if paceYields.Load() != y {
		d.yields = append(d.yields, d.now)
	}
	d.now += dt
}

// longCalls runs 60 ms of 1 ms calls and checks that every slot boundary
// in them yields once, at the first call after it.
func (d *paceDriver) longCalls(t *testing.T) {
	t.Helper()
	n := len(d.yields)
	for range 60 {
		d.step(1_000_000)
	}
	if len(d.yields) != n+12 {
		t.Errorf("%d yields in 60 ms of 1 ms calls, want 12: %v", len(d.yields)-n, d.yields[n:])
	}
	d.check(t, n, 1_000_000)
}

// check reports the yields from index from on that came more than late ns
// after their slot began, or in the slot of the yield before.
func (d *paceDriver) check(t *testing.T, from int, late int64) {
	t.Helper()
	for i, y := range d.yields[from:] {
		if b := y / d.every * d.every; y-b > late {
			t.Errorf("yield %d at %d ns, %d ns after its slot began; want at most %d", from+i, y, y-b, late)
		}
		if i+from > 0 && y/d.every == d.yields[from+i-1]/d.every {
			t.Errorf("yields %d and %d in the same slot", from+i-1, from+i)
		}
	}
}

// TestPaceTSC drives the counter gate on a fake clock and a fake counter
// (3 ticks per ns), one call every us, then one every ms:
//   - the first paceCalNs read the clock on every call (calibration);
//     after it the clock is read only at the first call past each slot
//     boundary, and that call yields;
//   - once calls take 1 ms, each boundary still yields at the first call
//     after it;
//   - a counter that steps back (a deadline more than paceSpan ahead)
//     sends the next call to the clock.
//
// Mutation checks: with the fast path removed (every call reads the
// clock), the reads after calibration are 19000, not at most 5; with the
// deadline one slot late, the yields come a whole slot after their
// boundaries; with the paceSpan test removed, the stepped-back counter
// reads no clock.
func TestPaceTSC(t *testing.T) {
	const every = 5 * int64(time.Millisecond)
	withPace(t, true, time.Duration(every))
	oldTSC := paceTSC
	paceTSCOn.Store(true)
	t.Cleanup(func() { paceTSC, _ = oldTSC, paceTSCOn.Swap(false) })
	d := newPaceDriver(every)
	base := d.now
	skew := uint64(0) // a step back of the counter, in ticks
	paceTSC = func() uint64 { return uint64(d.now-base)*3 + 1_000_000 - skew }
	r0 := paceReads.Load()
	for range paceCalNs / 1000 { // calibration: every call reads
		d.step(1000)
	}
	if reads := paceReads.Load() - r0; reads != paceCalNs/1000 {
		t.Errorf("%d clock reads in the first %d calls, want one each", reads, paceCalNs/1000)
	}
	r0 = paceReads.Load()
	for range 19000 { // 19 ms more of 1 us calls: boundaries at 4, 9, 14, 19 ms
		d.step(1000)
	}
	if reads := paceReads.Load() - r0; reads > 5 {
		t.Errorf("%d clock reads in 19000 calls 1 us apart after calibration, want at most 5 (one per boundary)", reads)
	}
	if len(d.yields) != 5 {
		t.Errorf("%d yields in 20 ms from 1 ms into a slot of 5 ms, want 5: %v", len(d.yields), d.yields)
	}
	d.check(t, 1, 1000)
	d.longCalls(t)
	// The counter steps back by two slots' ticks: the deadline now lies
	// further ahead than paceSpan allows, so the next call reads the clock.
	skew = uint64(2*every) * 3
	r0 = paceReads.Load()
	d.step(1000)
	if paceReads.Load() == r0 {
		t.Error("a counter that stepped back past paceSpan did not send the call to the clock")
	}
}

func TestPaceDoesNotAllocate(t *testing.T) {
	withPace(t, true, 0)
	if a := testing.AllocsPerRun(100, pace); a != 0 {
		t.Errorf("pace allocates %v", a)
	}
}

// TestUnpace: once stopped, a due pace no longer yields and Sched says it
// was stopped; without pacing Unpace changes nothing. Mutation check:
// Unpace leaving paceOn set makes the due pace yield.
func TestUnpace(t *testing.T) {
	defer unpaced.Store(false)
	if m, _ := schedMode.Load().(string); m == "" {
		schedMode.Store("auto")
		defer schedMode.Store("")
	}
	withPace(t, true, 0) // always due
	Unpace()
	y := paceYields.Load()
	pace()
	if paceYields.Load() != y {
		t.Error("pace yielded after Unpace")
	}
	if si := Sched(); si.Pace || !si.Unpaced || !strings.Contains(si.String(), "pace stopped") {
		t.Errorf("after Unpace: %+v (%s), want Pace false and Unpaced", si, si)
	}
	unpaced.Store(false)
	withPace(t, false, 0)
	Unpace()
	if si := Sched(); si.Pace || si.Unpaced {
		t.Errorf("Unpace without pacing: %+v, want neither Pace nor Unpaced", si)
	}
}
