package gosched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/runtime/tsc"
	"github.com/dpmlgo/dpml/mpi"
)

// How the package keeps the Go scheduler off a core-bound rank's core
// The mechanism, the evidence and the numbers are in the
// package doc; in short: a goroutine that is never
// rescheduled and spends its time in cgo calls makes the runtime's monitor
// thread (sysmon) take its P away at every tick once its scheduling tick
// is 10 ms old, wake another thread to run the P, and keep waking itself
// every 20 us, all on the rank's only core.
//
// pace: every MPI call that can wait first calls pace (mpi.SetWaitHook), which lets the
// calling goroutine yield (runtime.Gosched) when PaceEvery has passed
// since the last yield. The yield reschedules the goroutine, so its P's
// scheduling tick never gets old enough for sysmon's forced preemption,
// and sysmon backs off to 10 ms sleeps. The cost is a read of the time
// stamp counter per call where that is a clock (the counter gate, below;
// else the clock every few calls: paceGap), and for a goroutine locked to
// its thread (the normal MPI caller) two thread switches every PaceEvery.
//
// procs: when Apply finds GOMAXPROCS 1 (a rank bound to one core), it sets
// 2. With an idle P, sysmon leaves the P of a cgo call alone until the call
// has lasted 10 ms (runtime.retake skips it while another P is idle);
// with one P it takes it from any call that spans two of its ticks (20 us
// to 10 ms apart). The second P runs nothing unless the program has other
// runnable goroutines; GOMAXPROCS set in the environment wins.

// PaceEvery is the longest a goroutine making MPI calls goes without
// yielding: half the runtime's forcePreemptNS (10 ms), so that at least
// one yield falls between any two sysmon ticks (at most about 10 ms apart)
// as long as single calls are shorter than 5 ms.
const PaceEvery = 5 * time.Millisecond

var (
	paceEvery  atomic.Int64 // PaceEvery in ns; tests change it
	paceOn     atomic.Bool  // set by Apply (DPML_GOSCHED)
	paceSlot   atomic.Int64 // the slot (paceNow / paceEvery) of the last yield
	paceEpoch  = time.Now() // monotonic: time.Since reads only the monotonic clock
	paceWall0  = paceEpoch.UnixNano()
	paceYields atomic.Int64 // yields so far
	procsSet   atomic.Bool  // Apply raised GOMAXPROCS from 1 to 2
	unpaced    atomic.Bool  // Unpace stopped the pacing Apply started
	schedMode  atomic.Value // the DPML_GOSCHED mode Apply applied (string)
)

// paceNow is the time pace goes by, in ns: the wall clock at the process's
// start plus the monotonic time since, so one clock read (time.Since),
// yet the same grid in every process of a host (and across hosts as far
// as their clocks agree), and never stepping back. Tests replace it.
var paceNow = func() int64 { return paceWall0 + int64(time.Since(paceEpoch)) }

// Without the counter gate (paceTSCOn false: internal/runtime/tsc is no clock
// here), the clock read itself is most of what a pace that is not due
// costs (60 ns of a 1.3-1.5 us call on a 16-core node, where a cgo call
// costs 56 ns: gocall clock).
// So pace reads it only every paceGap calls: the gap doubles (up to paceMaxGap)
// while reads come less than paceReadNs/2 apart and falls back to 1 when
// they come more than 2 x paceReadNs apart. A yield then comes at most
// paceMaxGap short calls after it is due, one call once calls are long,
// and paceMaxGap calls when short calls turn long at once: the gap stays
// small for that (4 calls of 5 ms would be 20 ms, two of sysmon's ticks).
const (
	paceMaxGap = 4
	paceReadNs = 20_000
)

var (
	paceLeft  atomic.Int64 // calls before pace reads the clock again
	paceGap   atomic.Int64 // calls between clock reads (1..paceMaxGap)
	paceRead  atomic.Int64 // paceNow at the last clock read
	paceReads atomic.Int64 // clock reads so far (tests)
)

// Pace lets the calling goroutine yield (runtime.Gosched) if it is due:
// when the process paces (DPML_GOSCHED auto or pace, after Apply) and the
// clock has entered a new slot of PaceEvery since the last yield by any
// goroutine. The slots are a grid on the wall clock, the same in every
// process, so the ranks of a job yield in the same call or the next
// (below). Every MPI call of package mpi that may wait calls it first;
// call it yourself in a loop of your own cgo calls that poll or wait
// (another C library's progress function, say) made by a goroutine that is
// otherwise never rescheduled. When not due it costs a read of the time
// stamp counter (or, where that is no clock, an atomic add and a clock
// read every few calls: paceGap).
func Pace() { pace() }

func init() { paceEvery.Store(int64(PaceEvery)) }

// pace is Pace. Two goroutines passing the check at once both yield:
// harmless.
//
// Why a grid and not PaceEvery after this process's last yield: a locked
// goroutine's yield takes the rank off its core for two thread switches,
// and in a collective every rank waits for the one delayed. Each process
// timing its own interval from its own start puts the ranks' yields at
// unrelated times, so a job of N ranks has N separate delays per
// interval; on one grid they fall in the same call (or, for a rank that
// entered it just before the slot began, the next), where they overlap.
// The interval between one process's yields stays at most PaceEvery plus
// one call, as before.
func pace() {
	if !paceOn.Load() {
		return
	}
	if paceTSCOn.Load() {
		t := paceTSC()
		if d := paceDeadline.Load(); t < d && d-t <= paceSpan.Load() {
			return
		}
		paceByTSC(t)
		return
	}
	every := paceEvery.Load()
	if every > 0 && paceLeft.Add(-1) > 0 {
		return
	}
	now := paceNow()
	paceReads.Add(1)
	gap := paceGap.Load()
	switch dt := now - paceRead.Swap(now); {
	case dt > 2*paceReadNs:
		gap = 1
	case dt < paceReadNs/2 && gap < paceMaxGap:
		gap = max(2*gap, 1)
	}
	paceGap.Store(gap)
	paceLeft.Store(gap)
	paceSlotDue(now, every)
}

// paceSlotDue yields if now lies in a slot of the grid after the last
// yield's (every <= 0: always).
func paceSlotDue(now, every int64) {
	slot := now
	if every > 0 {
		slot /= every
		if slot == paceSlot.Load() {
			return
		}
	}
	paceSlot.Store(slot)
	paceYields.Add(1)
	runtime.Gosched()
}

// The counter gate (paceTSCOn, where internal/runtime/tsc is a clock): the gap's
// clock read every few calls costs every call 40 ns on a 16-core node
// (gocall clock), and in a collective more than that: each
// rank reads the clock on other calls, so nearly every call has some rank
// paying the whole read (60 ns and the gate's bookkeeping) on the critical
// path. Reading the time stamp counter on every call and the clock only
// once it passes the next slot boundary costs every rank the same few ns on
// every call, and a yield comes at the first call after its boundary, not
// up to paceMaxGap calls after it. The counter's rate comes from the clock:
// the first paceCalNs of pacing read the clock on every call, then the rate
// is the ticks over the ns since the first read, refined at every later
// read. A deadline never lies more than paceSpan ticks (one PaceEvery, at
// the rate measured) ahead: a counter that stepped back, or a rate gone
// wrong, sends the next call to the clock.
const paceCalNs = 1_000_000

var (
	paceTSC      = tsc.Read    // tests replace it
	paceTSCOn    atomic.Bool   // the counter gate is in use (applyGosched)
	paceDeadline atomic.Uint64 // the counter's value after which pace reads the clock
	paceSpan     atomic.Uint64 // the most ticks a deadline may lie ahead
	paceCalNs0   atomic.Int64  // the calibration's first clock read (0: none yet)
	paceCalTSC0  atomic.Uint64 // and the counter then
)

// paceByTSC is pace once the counter t has passed the deadline: the clock,
// the rate, the yield if due and the next deadline.
func paceByTSC(t uint64) {
	now := paceNow()
	paceReads.Add(1)
	if paceCalNs0.Load() == 0 {
		paceCalTSC0.Store(t)
		paceCalNs0.Store(now)
	}
	every := paceEvery.Load()
	var deadline, span uint64 // 0, 0: read the clock at the next call
	if dns := now - paceCalNs0.Load(); every > 0 && dns >= paceCalNs && t > paceCalTSC0.Load() {
		rate := float64(t-paceCalTSC0.Load()) / float64(dns) // ticks per ns
		next := (now/every + 1) * every
		deadline = t + uint64(float64(next-now)*rate)
		span = uint64(float64(every)*rate) + 1
	}
	paceSpan.Store(span)
	paceDeadline.Store(deadline)
	paceSlotDue(now, every)
}

// goschedMode parses DPML_GOSCHED: whether to pace MPI calls and whether
// to raise GOMAXPROCS 1 to 2.
func goschedMode() (mode string, pace, procs bool, err error) {
	mode, err = config.Get(config.GoSched)
	if err != nil {
		return "", false, false, err
	}
	switch mode {
	case "auto":
		return mode, true, true, nil
	case "pace":
		return mode, true, false, nil
	case "procs":
		return mode, false, true, nil
	case "off":
		return mode, false, false, nil
	}
	return "", false, false, fmt.Errorf("%w: %s=%q: want auto, pace, procs or off", ErrMode, config.GoSched, mode)
}

// applyGosched applies the parsed mode (Apply).
func applyGosched(mode string, pace, procs bool) {
	if procs && os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) == 1 {
		runtime.GOMAXPROCS(2)
		procsSet.Store(true)
	}
	paceSlot.Store(paceNow() / max(paceEvery.Load(), 1))
	paceCalNs0.Store(0)
	paceDeadline.Store(0)
	paceTSCOn.Store(pace && tsc.Usable())
	paceOn.Store(pace)
	schedMode.Store(mode)
	if pace {
		mpi.SetWaitHook(Pace)
	}
}

// ErrMode wraps a DPML_GOSCHED value that is none of its modes.
var ErrMode = errors.New("gosched: invalid mode")

var (
	applyOnce sync.Once
	applyErr  error
)

// Apply applies DPML_GOSCHED to the process, once (later calls return the
// first one's result): with pace, every MPI call of package mpi that may
// wait calls Pace first (mpi.SetWaitHook); with procs, GOMAXPROCS 1 (a rank
// bound to one core) becomes 2 unless GOMAXPROCS is set in the
// environment. dpml.New and libdpml.so call it: a goroutine that makes MPI
// calls and is never rescheduled, or a C thread that calls into Go (which
// looks to the runtime, between calls, like a goroutine in a long system
// call), draws the runtime monitor's storms (package doc). A bad value is
// returned and nothing is applied.
func Apply() error {
	applyOnce.Do(func() {
		mode, pace, procs, err := goschedMode()
		if err != nil {
			applyErr = err
			return
		}
		applyGosched(mode, pace, procs)
	})
	return applyErr
}

// Unpace stops the pacing Apply started (a no-op without it). libdpml.so
// calls it once the runtime's own threads run at SCHED_IDLE
// (internal/runtime/idlethreads): the storms pacing prevents then wake only
// threads that get a core when the rank leaves it idle, while a yield of a
// goroutine locked to its thread (every callback from C) still costs two
// thread switches through one of those threads. The first callback after
// a pause of more than PaceEvery always yields: on the 2-core development
// machine (1x2, a 4-byte MPI_Allreduce after a 50 ms sleep, 3 launches
// each) that call took 69-105 us in libdpml.so with pacing, 35-42 without.
func Unpace() {
	if paceOn.Swap(false) {
		unpaced.Store(true)
	}
}

// Info says how the process cooperates with the Go scheduler
// (DPML_GOSCHED; see the package doc).
type Info struct {
	Mode        string // the DPML_GOSCHED mode applied ("" before Apply)
	Pace        bool   // MPI calls yield the calling goroutine every few ms
	Unpaced     bool   // Unpace stopped the pacing the mode asked for
	RaisedProcs bool   // Apply raised GOMAXPROCS from 1 to 2
	Yields      int64  // yields so far
}

// Sched returns the settings Apply applied and the yield count.
func Sched() Info {
	m, _ := schedMode.Load().(string)
	return Info{Mode: m, Pace: paceOn.Load(), Unpaced: unpaced.Load(), RaisedProcs: procsSet.Load(), Yields: paceYields.Load()}
}

func (s Info) String() string {
	if s.Mode == "" {
		return "gosched: not applied"
	}
	pace := fmt.Sprint(s.Pace)
	if s.Unpaced {
		pace = "stopped (runtime threads idle)"
	}
	return fmt.Sprintf("gosched %s: pace %s, GOMAXPROCS raised %v, %d yields", s.Mode, pace, s.RaisedProcs, s.Yields)
}
