package dpml

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// Blocking MPI calls under DPML_TIMEOUT.
//
// Every wait of the engine on shared memory is bounded by the Waiter's
// timeout and returns an error. Two steps are blocking MPI calls that the
// engine cannot leave: the MPI library's own allreduce (the native plan)
// and the leaders' inter-node allreduce of a plan without overlap (the
// tree's and DPML's). Making them non-blocking (MPI_Iallreduce and a
// bounded test loop) would hand them to Open MPI's libnbc, slower than its
// tuned blocking algorithms at the small sizes where these steps matter.
// So they stay blocking, and a watchdog bounds them instead: a step marks
// itself in its Comm's watch word on entry and exit (two atomic stores, no
// clock read), and one goroutine per process looks at the words every
// eighth of the timeout (10 ms to 1 s). A step seen in the same call for
// longer than DPML_TIMEOUT means a peer stopped (SIGSTOP, a debugger, a
// hung node) or never came: the watchdog prints which step on which rank,
// then calls MPI_Abort on the communicator, which ends every rank of the
// job. A peer that died ends the job through the MPI library anyway; a
// peer that only stalls would otherwise hang it forever.
//
// Setup is one watched step (stepSetup) from before New's first collective
// (the duplicate of the program's communicator) to its last: a peer that
// stops during setup ends the job like one that stops during a call.
// Agree outside New (libdpml.so's agreement at a communicator's first
// call, New with Deferred) is watched the same way (stepAgree).
//
// A negative DPML_TIMEOUT (wait forever) disarms the watchdog.

// Watched steps (the low byte of a watch word; 0: not in a blocking step).
const (
	stepNone uint64 = iota
	stepNative
	stepInter
	stepTuner
	stepCheck
	stepSetup
	stepAgree
	numSteps
)

var stepNames = [numSteps]string{stepNone: "no step", stepNative: "the MPI library's allreduce (native plan)",
	stepInter: "the leaders' inter-node allreduce", stepTuner: "the tuner's exchange of call times",
	stepCheck: "DPML_CHECK's comparison of the call's arguments", stepSetup: "the communicator's setup (its collectives)",
	stepAgree: "the ranks' agreement on their settings (Agree)"}

// watch is a Comm's watch word: (calls << 8) | step. Only the calling
// goroutine writes it; the watchdog reads it.
type watch struct {
	word atomic.Uint64
	n    uint64 // entries so far (owned by the calling goroutine)
}

// enter marks the start of a blocking step.
func (w *watch) enter(step uint64) {
	w.n++
	w.word.Store(w.n<<8 | step)
}

// leave marks its end.
func (w *watch) leave() { w.word.Store(w.n << 8) }

// watchdog is the process's one watching goroutine and the Comms it
// watches.
var watchdog struct {
	mu     sync.Mutex
	comms  map[*Comm]*watchSeen
	period time.Duration
	run    bool
	// wake cuts the loop's current sleep short when the period shrinks:
	// a Comm with a 300 ms timeout created while the loop sleeps a
	// 60 s timeout's 1 s period is watched at its own period at once.
	wake chan struct{}
}

type watchSeen struct {
	word  uint64
	since time.Time
}

// startWatch registers c with the watchdog (at New), starting it on first
// use; the period is an eighth of the shortest timeout watched.
func (c *Comm) startWatch() {
	timeout := c.wait.Timeout
	if timeout == 0 {
		timeout = shm.DefaultTimeout
	}
	if timeout < 0 {
		return
	}
	c.watchTimeout = timeout
	period := min(max(timeout/8, 10*time.Millisecond), time.Second)
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.comms == nil {
		watchdog.comms = map[*Comm]*watchSeen{}
	}
	watchdog.comms[c] = &watchSeen{}
	shortenWatchPeriodLocked(period)
	if !watchdog.run {
		watchdog.run = true
		go watchLoop()
	}
}

// shortenWatchPeriodLocked lowers the watchdog's period to d if that is
// shorter, waking the loop so that it takes effect now rather than after
// the sleep in progress. watchdog.mu is held.
func shortenWatchPeriodLocked(d time.Duration) {
	if watchdog.wake == nil {
		watchdog.wake = make(chan struct{}, 1)
	}
	if watchdog.period != 0 && d >= watchdog.period {
		return
	}
	watchdog.period = d
	select {
	case watchdog.wake <- struct{}{}:
	default: // a wake is already pending
	}
}

// stopWatch unregisters c (at Close).
func (c *Comm) stopWatch() {
	watchdog.mu.Lock()
	delete(watchdog.comms, c)
	watchdog.mu.Unlock()
}

// testHookWatchAbort, when set by a test, replaces the abort (the test
// checks the message instead of losing its process).
var testHookWatchAbort func(c *Comm, msg string)

func watchLoop() {
	for {
		watchdog.mu.Lock()
		period, wake := watchdog.period, watchdog.wake
		watchdog.mu.Unlock()
		t := time.NewTimer(period)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
			continue // sleep again at the new period
		}
		now := time.Now()
		watchdog.mu.Lock()
		var stuck []*Comm
		for c, seen := range watchdog.comms {
			w := c.watch.word.Load()
			switch {
			case w&0xff == stepNone:
				seen.word = w
			case w != seen.word:
				seen.word, seen.since = w, now
			case now.Sub(seen.since) >= c.watchTimeout:
				stuck = append(stuck, c)
				delete(watchdog.comms, c) // report once
			}
		}
		watchdog.mu.Unlock()
		for _, c := range stuck {
			step := stepNames[min(c.watch.word.Load()&0xff, numSteps-1)]
			host, _ := os.Hostname()
			msg := fmt.Sprintf("dpml: rank %d of %d (local rank %d on %s): %s did not complete within %s=%v: a peer stopped, stalled or never made the call; aborting the job",
				c.rank, c.size, c.local, host, step, config.Timeout, c.watchTimeout)
			if h := testHookWatchAbort; h != nil {
				h(c, msg)
				continue
			}
			fmt.Fprintln(os.Stderr, msg)
			target := c.world
			if target == nil {
				target = c.parent // setup, before the duplicate exists
			}
			_ = mpi.Abort(target, 14)
		}
	}
}
