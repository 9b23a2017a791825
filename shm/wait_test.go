package shm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaiterReady(t *testing.T) {
	var f atomic.Uint64
	f.Store(5)
	for _, w := range []Waiter{{}, {Spin: -1}, {Spin: 1, Timeout: -1}} {
		if err := w.UntilAtLeast(&f, 5); err != nil {
			t.Fatal(err)
		}
		if err := w.UntilAtLeast(&f, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.UntilAllAtLeast(nil, 9); err != nil {
			t.Fatal(err)
		}
	}
	// Ready wins over a set abort word.
	var abort atomic.Uint64
	abort.Store(1)
	w := Waiter{Abort: &abort}
	if err := w.UntilAtLeast(&f, 3); err != nil {
		t.Fatal(err)
	}
}

// setLater stores v into each flag, in order, after d.
func setLater(d time.Duration, v uint64, flags ...*atomic.Uint64) {
	go func() {
		for _, f := range flags {
			time.Sleep(d)
			f.Store(v)
		}
	}()
}

func TestWaiterWakes(t *testing.T) {
	tests := []struct {
		name  string
		w     Waiter
		delay time.Duration
		n     int // number of flags; 0 = UntilAtLeast on one flag
	}{
		{"spin only", Waiter{Spin: 1 << 30, Timeout: 10 * time.Second}, 0, 0},
		{"default", Waiter{}, time.Millisecond, 0},
		{"no spin", Waiter{Spin: -1, Timeout: 10 * time.Second}, time.Millisecond, 0},
		{"into sleep phase", Waiter{Spin: -1}, 20 * time.Millisecond, 0},
		{"forever", Waiter{Timeout: -1}, 5 * time.Millisecond, 0},
		{"all of one", Waiter{}, time.Millisecond, 1},
		{"all of eight", Waiter{Spin: 10}, time.Millisecond, 8},
		{"all, slow", Waiter{Spin: -1}, 5 * time.Millisecond, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			polls := 0
			w := tc.w
			w.Poll = func() error { polls++; return nil }
			if tc.n == 0 {
				var f atomic.Uint64
				f.Store(1)
				setLater(tc.delay, 3, &f)
				if err := w.UntilAtLeast(&f, 2); err != nil {
					t.Fatal(err)
				}
				if f.Load() != 3 {
					t.Fatal("returned before the flag was set")
				}
			} else {
				flags := make([]*atomic.Uint64, tc.n)
				for i := range flags {
					flags[i] = new(atomic.Uint64)
				}
				flags[0].Store(9) // some already ready
				// Set them out of order: the last first.
				rev := make([]*atomic.Uint64, 0, tc.n)
				for i := tc.n - 1; i >= 0; i-- {
					rev = append(rev, flags[i])
				}
				setLater(tc.delay, 7, rev...)
				if err := w.UntilAllAtLeast(flags, 7); err != nil {
					t.Fatal(err)
				}
				for i, f := range flags {
					if f.Load() < 7 {
						t.Fatalf("flag %d = %d after UntilAllAtLeast", i, f.Load())
					}
				}
			}
			t.Logf("polls: %d", polls)
		})
	}
}

// Pace runs once per back-off round, like Poll, and never while spinning.
//
// No timer decides what the waits see, so the test holds on an
// oversubscribed machine (a flag set by a goroutine 2 ms later could be
// set before an oversubscribed waiter's first round: no round, no pace).
// The first wait's flag is set by its own Poll, after the yield rounds and
// some of the sleep rounds, so both kinds of round are counted exactly.
// The second wait spins without end: only the flag can end it, so the
// spin phase cannot run out into back-off rounds however late the setter
// runs.
//
// Mutation check: without w.Pace() in backoff.round the first wait
// counts 0 paces; with a Pace call in Until's spin loop the second one
// counts paces while spinning.
func TestWaiterPace(t *testing.T) {
	var f atomic.Uint64
	rounds := DefaultSchedule().YieldRounds + 2*DefaultSchedule().SleepEvery
	polls, paces := 0, 0
	w := Waiter{Spin: -1, Timeout: time.Minute,
		Poll: func() error {
			if polls++; polls == rounds {
				f.Store(1)
			}
			return nil
		},
		Pace: func() { paces++ }}
	if err := w.UntilAtLeast(&f, 1); err != nil {
		t.Fatal(err)
	}
	if polls != rounds || paces != polls {
		t.Errorf("%d paces in %d back-off rounds, want %d in %d", paces, polls, rounds, rounds)
	}
	paces = 0
	w = Waiter{Spin: math.MaxInt, Pace: func() { paces++ }}
	setLater(time.Millisecond, 2, &f)
	if err := w.UntilAtLeast(&f, 2); err != nil {
		t.Fatal(err)
	}
	if paces != 0 {
		t.Errorf("%d paces while spinning", paces)
	}
}

func TestWaiterTimeout(t *testing.T) {
	tests := []struct {
		name string
		w    Waiter
		n    int
	}{
		{"single", Waiter{Timeout: 20 * time.Millisecond}, 0},
		{"single, no spin", Waiter{Spin: -1, Timeout: time.Millisecond}, 0},
		{"all", Waiter{Timeout: 20 * time.Millisecond}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.n == 0 {
				var f atomic.Uint64
				f.Store(4)
				err = tc.w.UntilAtLeast(&f, 5)
			} else {
				flags := []*atomic.Uint64{new(atomic.Uint64), new(atomic.Uint64), new(atomic.Uint64)}
				flags[0].Store(5)
				err = tc.w.UntilAllAtLeast(flags, 5)
			}
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			if tc.n == 0 && !strings.Contains(err.Error(), ">= 5, saw 4") ||
				tc.n != 0 && !strings.Contains(err.Error(), "flag 1 of 3") {
				t.Fatalf("error %q does not say what it waited for", err)
			}
			t.Log(err)
		})
	}
}

func TestWaiterAbort(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprint("all=", all), func(t *testing.T) {
			var f, abort atomic.Uint64
			w := Waiter{Timeout: -1, Abort: &abort, Spin: 1 << 40} // only Abort can end it
			setLater(5*time.Millisecond, 2, &abort)
			var err error
			if all {
				err = w.UntilAllAtLeast([]*atomic.Uint64{&f}, 1)
			} else {
				err = w.UntilAtLeast(&f, 1)
			}
			if !errors.Is(err, ErrAborted) {
				t.Fatalf("err = %v, want ErrAborted", err)
			}
		})
	}
}

func TestWaiterPollError(t *testing.T) {
	boom := errors.New("boom")
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprint("all=", all), func(t *testing.T) {
			var f atomic.Uint64
			calls := 0
			w := Waiter{Spin: -1, Poll: func() error {
				calls++
				if calls == 5 {
					return boom
				}
				return nil
			}}
			var err error
			if all {
				err = w.UntilAllAtLeast([]*atomic.Uint64{&f}, 1)
			} else {
				err = w.UntilAtLeast(&f, 1)
			}
			if err != boom || calls != 5 {
				t.Fatalf("err = %v after %d polls, want boom after 5", err, calls)
			}
		})
	}
}

// Cross-process test: the parent creates a segment, re-executes the test
// binary as a child that opens it, and the two hand flags back and forth.
//
// Layout: word at 0 = child's flag, word at CacheLine = parent's flag,
// bytes from 2*CacheLine = payload.
const crossSize = 4096

func TestCrossProcess(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	s := mustCreate(t, crossSize)
	b := s.Bytes()
	copy(b[2*CacheLine:], "from parent")
	child, parent := Uint64At(b, 0), Uint64At(b, CacheLine)

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrossProcessChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+s.Name()+":"+strconv.Itoa(crossSize))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var exited atomic.Bool
	waitErr := make(chan error, 1)
	go func() { err := cmd.Wait(); exited.Store(true); waitErr <- err }()
	// Poll ends the wait early if the child died without setting the flag.
	w := Waiter{Timeout: 30 * time.Second, Poll: func() error {
		if exited.Load() {
			return errors.New("child exited")
		}
		return nil
	}}
	fail := func(err error) {
		t.Helper()
		if !exited.Load() {
			_ = cmd.Process.Kill()
		}
		<-waitErr
		t.Fatalf("%v; child output:\n%s", err, out.String())
	}

	if err := w.UntilAtLeast(child, 1); err != nil { // child has opened
		fail(err)
	}
	// The engine's order: all opened, then the creator unlinks.
	if err := s.Unlink(); err != nil {
		fail(err)
	}
	parent.Store(1)
	if err := w.UntilAtLeast(child, 2); err != nil { // child wrote its reply
		fail(err)
	}
	if got := string(b[2*CacheLine : 2*CacheLine+len("from child")]); got != "from child" {
		fail(fmt.Errorf("payload %q", got))
	}
	if err := <-waitErr; err != nil {
		t.Fatalf("child: %v; output:\n%s", err, out.String())
	}
}

// TestCrossProcessChild is the child half of TestCrossProcess; it does
// nothing unless run by it.
func TestCrossProcessChild(t *testing.T) {
	arg := os.Getenv(childEnv)
	if arg == "" {
		t.Skip("only run as TestCrossProcess's child")
	}
	if strings.HasPrefix(arg, "barrier:") {
		barrierChild(t, arg)
		return
	}
	name, sz, _ := strings.Cut(arg, ":")
	size, err := strconv.Atoi(sz)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(name, size)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.Bytes()
	if got := string(b[2*CacheLine : 2*CacheLine+len("from parent")]); got != "from parent" {
		t.Fatalf("payload %q", got)
	}
	child, parent := Uint64At(b, 0), Uint64At(b, CacheLine)
	child.Store(1)
	w := Waiter{Timeout: 30 * time.Second}
	if err := w.UntilAtLeast(parent, 1); err != nil {
		t.Fatal(err)
	}
	copy(b[2*CacheLine:], "from child")
	child.Store(2)
}

// TestCrossProcessBarrier runs barrierProcs processes (this one and
// children) through barrierRounds rounds of a flag barrier: each sets its
// own flag to the round number and waits until every flag reaches it. With
// more processes than cores (the test machine has 2) it only finishes in
// time if waiters yield their cores.
const (
	barrierProcs  = 5
	barrierRounds = 200
)

func TestCrossProcessBarrier(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	size := barrierProcs * CacheLine
	s := mustCreate(t, size)
	type proc struct {
		cmd  *exec.Cmd
		out  bytes.Buffer
		done chan error
	}
	var exited atomic.Int32
	procs := make([]*proc, barrierProcs-1)
	for i := range procs {
		p := &proc{done: make(chan error, 1)}
		p.cmd = exec.Command(os.Args[0], "-test.run=^TestCrossProcessChild$", "-test.count=1")
		p.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=barrier:%s:%d:%d", childEnv, s.Name(), size, i+1))
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { err := p.cmd.Wait(); exited.Add(1); p.done <- err }()
		procs[i] = p
	}
	w := Waiter{Timeout: 60 * time.Second, Poll: func() error {
		if exited.Load() != 0 {
			return errors.New("a child exited early")
		}
		return nil
	}}
	start := time.Now()
	err := barrierRun(s, 0, w)
	if err == nil {
		t.Logf("%d processes x %d rounds in %v", barrierProcs, barrierRounds, time.Since(start))
	}
	for i, p := range procs {
		if err != nil {
			_ = p.cmd.Process.Kill()
		}
		if cerr := <-p.done; cerr != nil || err != nil {
			t.Errorf("child %d: %v; output:\n%s", i+1, cerr, p.out.String())
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// barrierRun runs the rounds for process me.
func barrierRun(s *Segment, me int, w Waiter) error {
	flags, err := Uint64sAt(s.Bytes(), 0, CacheLine, barrierProcs)
	if err != nil {
		return err
	}
	for r := uint64(1); r <= barrierRounds; r++ {
		flags[me].Store(r)
		if err := w.UntilAllAtLeast(flags, r); err != nil {
			return fmt.Errorf("process %d round %d: %w", me, r, err)
		}
	}
	return nil
}

func barrierChild(t *testing.T, arg string) {
	parts := strings.Split(arg, ":")
	if len(parts) != 4 {
		t.Fatalf("bad child argument %q", arg)
	}
	name := parts[1]
	size, err1 := strconv.Atoi(parts[2])
	me, err2 := strconv.Atoi(parts[3])
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	s, err := Open(name, size)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := barrierRun(s, me, Waiter{Timeout: 60 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// TestNoSleepStillTimesOut: a waiter that never sleeps (ranks that own
// their cores) still reads the clock and ends a hopeless wait. Mutation
// check: returning nil from backoff.round before the deadline check when
// NoSleep is set made this test hang until go test's timeout.
func TestNoSleepStillTimesOut(t *testing.T) {
	var f atomic.Uint64
	w := Waiter{Spin: -1, Timeout: 30 * time.Millisecond, NoSleep: true}
	for _, wait := range []func() error{
		func() error { return w.UntilAtLeast(&f, 1) },
		func() error { return w.Until(func() (bool, error) { return false, nil }) },
	} {
		if err := wait(); !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
	}
}

// idleProbe counts Idle and Late calls; work, if set, runs inside Idle.
type idleProbe struct {
	has        bool // work due
	idle, late int
	work       func()
}

func (p *idleProbe) Idle() bool {
	if !p.has {
		return false
	}
	p.idle++
	p.has = false
	if p.work != nil {
		p.work()
	}
	return true
}

func (p *idleProbe) Late() { p.late++ }

// TestWaiterIdle: a wait that is ready at once runs no idle work; one
// that is not runs it once, before it spins; Late is called exactly when
// the condition was met by the time the work ended.
func TestWaiterIdle(t *testing.T) {
	var f atomic.Uint64
	f.Store(1)
	cases := []struct {
		name       string
		has        bool
		want       uint64
		raise      bool // the work itself raises the flag (the wait is over when it ends)
		idle, late int
	}{
		{"ready at once", true, 1, false, 0, 0},
		{"nothing due", false, 2, false, 0, 0},
		{"work hidden in the wait", true, 2, false, 1, 0},
		{"work outlasts the wait", true, 2, true, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.Store(1)
			p := &idleProbe{has: tc.has}
			p.work = func() {
				if tc.raise {
					f.Store(2)
				}
			}
			if !tc.raise && tc.want > 1 {
				setLater(100*time.Millisecond, 2, &f) // far beyond the idle work, even on a loaded machine
			}
			w := Waiter{Spin: 10, Timeout: 10 * time.Second, Idle: p}
			if err := w.UntilAtLeast(&f, tc.want); err != nil {
				t.Fatal(err)
			}
			if p.idle != tc.idle || p.late != tc.late {
				t.Errorf("Idle ran %d times, Late %d; want %d and %d", p.idle, p.late, tc.idle, tc.late)
			}
		})
	}
}
