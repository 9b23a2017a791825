package shm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ErrTimeout is returned (wrapped with the value waited for and the value
// seen) when a wait runs past its Waiter's Timeout.
var ErrTimeout = errors.New("shm: wait timed out")

// ErrAborted is returned (wrapped with the abort word's value) when a
// Waiter's Abort word becomes non-zero during a wait.
var ErrAborted = errors.New("shm: wait aborted")

// Defaults of the zero Waiter.
const (
	DefaultSpin    = 2000             // tight-loop loads before backing off
	DefaultTimeout = 60 * time.Second // wait limit when Timeout == 0
)

// Schedule is the back-off of a wait after its spin phase, as data: the
// phases Waiter describes, with their numbers. Every wait of the engine
// follows DefaultSchedule; a wait written outside Go (dpml's fused call,
// in C, which runs without the Go runtime) is handed the same values and
// decides each round with the same rule (Step), so a call waits alike
// on either path.
type Schedule struct {
	YieldRounds int           // rounds that yield before the first sleep
	MinSleep    time.Duration // the first sleep
	MaxSleep    time.Duration // sleeps double up to this
	SleepEvery  int           // rounds per sleep length before it doubles
	ClockEvery  int           // rounds between clock reads while yielding
	AbortEvery  int           // spins between Abort checks while spinning
}

// DefaultSchedule is the schedule of every Waiter. A function, not a
// variable: the schedule cannot change under the waits that follow it,
// and its numbers are constants where the Go waits read them.
func DefaultSchedule() Schedule {
	return Schedule{
		YieldRounds: 256,
		MinSleep:    1 * time.Microsecond,
		MaxSleep:    64 * time.Microsecond,
		SleepEvery:  32,
		ClockEvery:  64,
		AbortEvery:  256,
	}
}

// Step is back-off round round's action (rounds count from 1): sleep 0
// yields the core (sched_yield), a positive sleep sleeps that long; prev
// is the round before's sleep (0 for the first round or after yields).
// clock reports whether the round ends with a look at the clock (the
// deadline): every ClockEvery-th yielding round and every sleep.
// noSleep is Waiter.NoSleep: yield in every round.
func (s *Schedule) Step(round int, noSleep bool, prev time.Duration) (sleep time.Duration, clock bool) {
	if round <= s.YieldRounds || noSleep {
		return 0, round%s.ClockEvery == 0
	}
	switch {
	case prev == 0:
		return s.MinSleep, true
	case round%s.SleepEvery == 0 && prev < s.MaxSleep:
		return 2 * prev, true
	}
	return prev, true
}

// Waiter waits for flag words in shared memory to reach a value, with a
// bounded, backing-off loop. The zero Waiter is ready to use: DefaultSpin
// spins, then back-off, DefaultTimeout, no Poll, no Abort. A Waiter is not
// modified by waiting and may be shared by goroutines.
//
// A wait proceeds in phases:
//
//  1. Spin: up to Spin loads of the flag in a tight loop (Spin == 0 means
//     DefaultSpin, Spin < 0 none). A flag set by a process running on
//     another core is seen within ~100 ns.
//  2. Yield: rounds of Poll (if set) then sched_yield(2). Yielding the OS
//     thread, not only the goroutine, matters: the engine's callers are
//     goroutines locked to OS threads, and other MPI processes share the
//     cores, so on an oversubscribed node the process that will set the flag
//     may be waiting for this very core.
//  3. Sleep: after DefaultSchedule's YieldRounds rounds, each round
//     sleeps instead (nanosleep, so the OS thread really blocks),
//     starting at 1 us and doubling every few rounds up to 64 us (Linux
//     timer slack rounds short sleeps up to about 50 us anyway). Long waits (a slow peer, a leader busy in a network
//     reduction) then cost almost no CPU, at the price of up to ~100 us of
//     extra latency on a wait that was already long.
//
// The clock is read only every few rounds (and after each sleep), not in the
// spin loop. Timeout is measured from the end of the spin phase; Timeout ==
// 0 means DefaultTimeout, Timeout < 0 waits forever. The timeout turns a
// deadlock (a peer that died or took another code path) into an error
// instead of a hang.
//
// Flags are assumed monotonic (counters or sequence numbers that only grow)
// while a wait is in progress: UntilAllAtLeast does not re-check a flag once
// it has seen it ready.
type Waiter struct {
	// Spin is the number of tight-loop checks before backing off:
	// 0 = DefaultSpin, negative = none.
	Spin int
	// Timeout bounds a wait: 0 = DefaultTimeout, negative = forever.
	Timeout time.Duration
	// Poll, if non-nil, is called once per back-off round; the engine uses
	// it to progress outstanding MPI requests while it waits. A non-nil
	// error from Poll ends the wait and is returned unchanged.
	Poll func() error
	// Pace, if non-nil, is called once per back-off round, after Poll and
	// before the core is given away; the engine sets the pacing of
	// package internal/runtime/gosched, which lets the goroutine yield to the Go
	// scheduler every few ms, so a long wait whose rounds sit mostly in
	// sched_yield or nanosleep does not draw the runtime's monitor thread
	// onto the rank's core (that package's doc).
	Pace func()
	// Abort, if non-nil, ends the wait with ErrAborted as soon as it is
	// seen non-zero (checked every round and every abortEvery spins).
	Abort *atomic.Uint64
	// NoSleep keeps the back-off at sched_yield for the whole wait: for
	// processes that own their core (no oversubscription), as MPI
	// libraries poll. Sleeping there saves nothing (the core has no other
	// work) and costs latency: an idle core drops into a deep idle state
	// (on a VM the host may deschedule the virtual CPU), and the next
	// small-message calls pay its wake-up.
	NoSleep bool
	// Idle, if non-nil, is offered each wait whose condition is not met
	// at its first check, before the spin phase: work the caller has due
	// anyway runs in the time it would spend waiting (IdleWork).
	Idle IdleWork
}

// IdleWork is work a Waiter's caller has due and can run while it waits
// for its peers: the engine's learner folds and commits its samples there,
// off the program's critical path when the peers are not yet ready.
type IdleWork interface {
	// Idle runs the due work, if any, and reports whether it ran any.
	Idle() bool
	// Late tells that the wait's condition was already met when the
	// work that Idle just ran ended: the work may have delayed this
	// caller.
	Late()
}

// Until waits until ready reports true: the one wait loop behind every wait
// of the engine, on flags in shared memory and on MPI requests alike. ready
// is called in the spin phase and once per back-off round; an error from it
// ends the wait and is returned unchanged. Until returns nil, or an error
// wrapping ErrTimeout or ErrAborted, or ready's or Poll's error. ready is
// not retained after Until returns.
func (w *Waiter) Until(ready func() (bool, error)) error {
	if ok, err := ready(); ok || err != nil {
		return err
	}
	if w.Idle != nil && w.Idle.Idle() {
		if ok, err := ready(); ok || err != nil {
			w.Idle.Late()
			return err
		}
	}
	// A countdown, not i%AbortEvery: a division by a variable in every
	// spin would slow the loop that sees a flag first.
	every := DefaultSchedule().AbortEvery
	for i, ab := w.spins(), every; i > 0; i-- {
		if ok, err := ready(); ok || err != nil {
			return err
		}
		if ab--; ab <= 0 {
			if w.aborted() {
				break
			}
			ab = every
		}
	}
	var b backoff
	b.start(w)
	for {
		if ok, err := ready(); ok || err != nil {
			return err
		}
		if err := b.round(w); err != nil {
			if errors.Is(err, ErrTimeout) {
				if ok, rerr := ready(); ok || rerr != nil { // ready after all: prefer success
					return rerr
				}
				return fmt.Errorf("%w after %v", ErrTimeout, time.Since(b.t0))
			}
			return err
		}
	}
}

// UntilAtLeast waits until f.Load() >= v. It returns nil, ErrTimeout,
// ErrAborted (both wrapped) or an error from Poll. A flag already ready
// returns nil at once, whatever Abort says.
func (w *Waiter) UntilAtLeast(f *atomic.Uint64, v uint64) error {
	if f.Load() >= v { // the common case, without the closure
		return nil
	}
	err := w.Until(func() (bool, error) { return f.Load() >= v, nil })
	if errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w: waiting for flag >= %d, saw %d", err, v, f.Load())
	}
	return err
}

// UntilAllAtLeast waits until every flag in flags has Load() >= v: the
// common case of a leader waiting for all ranks of its node. It remembers
// the first flag not yet ready and never rescans the ready ones before it.
// Errors are as for UntilAtLeast; a timeout names the first flag not ready.
func (w *Waiter) UntilAllAtLeast(flags []*atomic.Uint64, v uint64) error {
	i := 0
	advance := func() (bool, error) {
		for i < len(flags) && flags[i].Load() >= v {
			i++
		}
		return i == len(flags), nil
	}
	err := w.Until(advance)
	if errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w: waiting for flag %d of %d >= %d, saw %d", err, i, len(flags), v, flags[i].Load())
	}
	return err
}

func (w *Waiter) spins() int {
	switch {
	case w.Spin == 0:
		return DefaultSpin
	case w.Spin < 0:
		return 0
	}
	return w.Spin
}

func (w *Waiter) aborted() bool { return w.Abort != nil && w.Abort.Load() != 0 }

// backoff is the state of the post-spin phase of one wait.
type backoff struct {
	t0       time.Time
	deadline time.Time // zero: none
	rounds   int
	sleep    time.Duration
}

func (b *backoff) start(w *Waiter) {
	b.t0 = time.Now()
	switch {
	case w.Timeout == 0:
		b.deadline = b.t0.Add(DefaultTimeout)
	case w.Timeout > 0:
		b.deadline = b.t0.Add(w.Timeout)
	}
}

// round does one back-off step: abort check, Poll, yield or sleep, and
// (every few rounds) the deadline check. A nil return means "check again".
func (b *backoff) round(w *Waiter) error {
	if w.Abort != nil {
		if a := w.Abort.Load(); a != 0 {
			return fmt.Errorf("%w (abort word %d)", ErrAborted, a)
		}
	}
	if w.Poll != nil {
		if err := w.Poll(); err != nil {
			return err
		}
	}
	if w.Pace != nil {
		w.Pace()
	}
	b.rounds++
	var clock bool
	sc := DefaultSchedule()
	b.sleep, clock = sc.Step(b.rounds, w.NoSleep, b.sleep)
	if b.sleep == 0 {
		yield()
	} else {
		sleep(b.sleep)
	}
	if !clock {
		return nil
	}
	if !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
		return ErrTimeout
	}
	return nil
}

// yield gives up the OS thread's core (sched_yield(2)) so another runnable
// thread or process, possibly the one that will set the flag, can run.
// x/sys/unix has no wrapper on Linux; the syscall cannot fail.
func yield() {
	_, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}

// sleep blocks the OS thread (not just the goroutine) for about d.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil) // EINTR: an early wake-up is harmless
}

// Yield gives the calling OS thread's core away (sched_yield), for polling
// loops outside a Waiter, such as the engine's loop on MPI requests.
func Yield() { yield() }
