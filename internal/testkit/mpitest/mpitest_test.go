package mpitest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/mpi"
)

func TestMain(m *testing.M) { Main(m) }

// hostnames gathers every rank's hostname.
func hostnames(t *testing.T, c *mpi.Comm) []string {
	t.Helper()
	const w = 64
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	send := make([]uint8, w)
	copy(send, h)
	recv := make([]uint8, w*c.Size())
	if err := mpi.Allgather(c, send, recv); err != nil {
		t.Fatal(err)
	}
	out := make([]string, c.Size())
	for i := range out {
		out[i] = string(bytes.TrimRight(recv[i*w:(i+1)*w], "\x00"))
	}
	return out
}

// checkLayout checks World, the SHARED split and the hostnames against l.
func checkLayout(t *testing.T, world *mpi.Comm, l Layout) {
	if world.Size() != l.Size() {
		t.Fatalf("world size %d, want %d", world.Size(), l.Size())
	}
	node := l.NodeOf(world.Rank())
	shared, err := world.SplitShared(0)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Free()
	if shared.Size() != l.PPN[node] {
		t.Errorf("rank %d: shared comm size %d, want %d", world.Rank(), shared.Size(), l.PPN[node])
	}
	hosts := hostnames(t, world)
	for r, h := range hosts {
		if want := "node" + strconv.Itoa(l.NodeOf(r)+1); h != want {
			t.Errorf("rank %d runs on host %q, want %q", r, h, want)
		}
	}
	if got, want := os.Getenv("DPML_RUN_NODES"), strconv.Itoa(l.Nodes()); got != want {
		t.Errorf("DPML_RUN_NODES = %q, want %q", got, want)
	}
	if os.Getenv("DPML_JOB") == "" {
		t.Error("DPML_JOB is not set")
	}
	if err := world.Barrier(); err != nil {
		t.Fatal(err)
	}
}

func TestRun2x2(t *testing.T) {
	Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		checkLayout(t, world, Even(2, 2))
		t.Logf("rank %d of %d ok", world.Rank(), world.Size())
	})
}

func TestRunUneven(t *testing.T) {
	l := Layout{PPN: []int{3, 2}}
	RunLayout(t, l, func(t *testing.T, world *mpi.Comm) {
		checkLayout(t, world, l)
		if got := os.Getenv("DPML_RUN_PPN"); got != "3,2" {
			t.Errorf("DPML_RUN_PPN = %q", got)
		}
	})
}

// TestRunSeveral makes three Run calls in one test, in subtests too: each
// child must run exactly the body of its own call.
func TestRunSeveral(t *testing.T) {
	Run(t, 4, 1, func(t *testing.T, world *mpi.Comm) { checkLayout(t, world, Even(4, 1)) })
	Run(t, 1, 4, func(t *testing.T, world *mpi.Comm) { checkLayout(t, world, Even(1, 4)) })
	t.Run("sub test", func(t *testing.T) {
		Run(t, 2, 1, func(t *testing.T, world *mpi.Comm) { checkLayout(t, world, Even(2, 1)) })
	})
}

// selftestEnv selects the misbehaviour of the helper tests below; they
// skip unless it is set (by the tests that launch them).
const selftestEnv = "DPML_MPITEST_SELFTEST"

// rankTimeoutLine starts the line every rank of TestHelperMisbehave prints
// first: the go test -timeout it was given.
const rankTimeoutLine = "selftest rank timeout="

func TestHelperMisbehave(t *testing.T) {
	mode := os.Getenv(selftestEnv)
	if mode == "" {
		t.Skip("helper for TestFailureReported and TestTimeout")
	}
	fmt.Printf("%s%s\n", rankTimeoutLine, flag.Lookup("test.timeout").Value)
	Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		if world.Rank() == 3 {
			switch mode {
			case "fail":
				t.Fatalf("intentional failure on rank %d", world.Rank())
			case "panic":
				panic("intentional panic")
			case "hang":
				time.Sleep(time.Hour)
			}
		}
		_ = world.Barrier() // the others wait here for rank 3
	})
}

// rankTimeouts lists the go test -timeout values the ranks of a
// TestHelperMisbehave job printed.
func rankTimeouts(rep *Report) []string {
	var out []string
	for _, rr := range rep.Ranks {
		for _, l := range rr.Lines {
			if v, ok := strings.CutPrefix(l, rankTimeoutLine); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// checkRankTimeouts fails t unless at least atLeast ranks of the job
// printed their go test -timeout, each of them want. (A rank's output may
// not reach the report when the job is stopped early: atLeast is 1 after
// an abort, 0 after a timeout that may fire before the ranks start.)
func checkRankTimeouts(t *testing.T, rep *Report, want time.Duration, atLeast int) {
	t.Helper()
	got := rankTimeouts(rep)
	if len(got) < atLeast {
		t.Errorf("%d ranks printed their go test -timeout, want at least %d", len(got), atLeast)
	}
	for _, g := range got {
		if g != want.String() {
			t.Errorf("a rank ran with go test -timeout %s, want %v", g, want)
		}
	}
}

// execBounded is Exec, failing t if Exec has not returned within limit
// (Exec stops a job at o.Timeout by itself; limit only turns a hang into
// a failure with a message).
func execBounded(t *testing.T, o Options, limit time.Duration) (*Report, error) {
	t.Helper()
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Exec(o)
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		return r.rep, r.err
	case <-time.After(limit):
		t.Fatalf("Exec of a job with a %v timeout has not returned after %v", o.Timeout, limit)
		return nil, nil
	}
}

// TestFailureReported: a failing rank's output reaches the report, and its
// MPI_Abort stops the others (in the barrier) at once. "At once" is
// checked by what stopped them, not by the clock: neither Exec's timeout
// nor the ranks' own go test -timeout (which would stop them, later, had
// the abort not) may have fired. The ranks' go test -timeout is Exec's
// timeout less a quarter of it, at most 10 s; the two cases check both
// branches.
//
// Mutation check: without the mpi.Abort and os.Exit of a failing rank
// (mpitest.go), the others stay in the barrier until their own timeout
// and the test fails.
func TestFailureReported(t *testing.T) {
	for _, tc := range []struct {
		mode           string
		timeout, ranks time.Duration
	}{{"fail", 60 * time.Second, 50 * time.Second}, {"panic", 36 * time.Second, 27 * time.Second}} {
		t.Run(tc.mode, func(t *testing.T) {
			start := time.Now()
			rep, err := Exec(Options{Test: "TestHelperMisbehave", Layout: Even(2, 2),
				Env: []string{selftestEnv + "=" + tc.mode}, Timeout: tc.timeout})
			if err == nil {
				t.Fatal("no error from a failing rank")
			}
			if rep == nil {
				t.Fatalf("no report: %v", err)
			}
			text := rep.FailureText()
			t.Logf("%v (%v)\n%s", err, time.Since(start), text)
			if f := rep.Failed(); len(f) != 1 || f[0] != 3 {
				t.Errorf("failed ranks %v, want [3]", f)
			}
			want := "intentional failure on rank 3"
			if tc.mode == "panic" {
				want = "intentional panic"
			}
			if !strings.Contains(text, "[rank 3] ") || !strings.Contains(text, want) {
				t.Errorf("report lacks rank 3's %q", want)
			}
			if rep.TimedOut || rep.rankTimedOut() {
				t.Errorf("the job ran into a timeout (Exec's: %v); MPI_Abort should stop it at once", rep.TimedOut)
			}
			checkRankTimeouts(t, rep, tc.ranks, 1)
		})
	}
}

// TestTimeout: a hung job is stopped. "rank": the ranks' own go test
// -timeout fires first and prints their goroutines; "parent": no rank
// timeout, Exec's bound stops the job. The rank timeout is set here, far
// below Exec's: the one Exec derives when none is set leaves the ranks
// only Timeout/4 (at most 10 s) to start, which an oversubscribed machine
// can take (TestFailureReported checks the derived value).
func TestTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for _, tc := range []struct {
		name                 string
		timeout, rankTimeout time.Duration
	}{{"rank", 2 * time.Minute, 3 * time.Second}, {"parent", 6 * time.Second, -1}} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := execBounded(t, Options{Test: "TestHelperMisbehave", Layout: Even(2, 2),
				Env: []string{selftestEnv + "=hang"}, Timeout: tc.timeout, RankTimeout: tc.rankTimeout}, tc.timeout+2*time.Minute)
			if err == nil || rep == nil {
				t.Fatalf("want a timeout, got %v", err)
			}
			text := rep.FailureText()
			t.Logf("%v\n%s", err, text)
			if tc.rankTimeout < 0 {
				if !rep.TimedOut {
					t.Error("Exec's timeout did not fire")
				}
				checkRankTimeouts(t, rep, 0, 0)
				return
			}
			if !strings.Contains(text, "test timed out") || !strings.Contains(err.Error(), "go test -timeout") {
				t.Error("no rank reported its go test timeout")
			}
			if rep.TimedOut {
				t.Errorf("Exec's %v timeout stopped the job, not the ranks' %v", tc.timeout, tc.rankTimeout)
			}
		})
	}
}

func TestNoSuchTest(t *testing.T) {
	_, err := Exec(Options{Test: "TestDoesNotExist", Layout: Even(1, 1), Timeout: 60 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "no result") {
		t.Errorf("err = %v", err)
	}
}

func TestRunPattern(t *testing.T) {
	for in, want := range map[string]string{
		"TestX":          "^TestX$",
		"TestX/sub_test": "^TestX$/^sub_test$",
		"TestX/a.b(1)":   `^TestX$/^a\.b\(1\)$`,
	} {
		if got := RunPattern(in); got != want {
			t.Errorf("RunPattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLayout(t *testing.T) {
	if s := Even(2, 2).String(); s != "2x2" {
		t.Errorf("Even(2,2) = %s", s)
	}
	l := Layout{PPN: []int{3, 2}}
	if l.String() != "3,2" || l.Size() != 5 || l.Nodes() != 2 {
		t.Errorf("uneven: %s %d %d", l, l.Size(), l.Nodes())
	}
	for r, n := range []int{0, 0, 0, 1, 1, -1} {
		if got := l.NodeOf(r); got != n {
			t.Errorf("NodeOf(%d) = %d, want %d", r, got, n)
		}
	}
	k := Key(l, 2, "TestX/a#b")
	if k != "3,2#2#TestX/a#b" {
		t.Errorf("Key = %s", k)
	}
	if ls, n, name, ok := parseKey(k); !ok || ls != "3,2" || n != 2 || name != "TestX/a#b" {
		t.Errorf("parseKey(%q) = %q %d %q %v", k, ls, n, name, ok)
	}
	if _, _, _, ok := parseKey("2x2"); ok {
		t.Error("parseKey accepted 2x2")
	}
	if (Layout{}).validate() == nil || (Layout{PPN: []int{1, 0}}).validate() == nil {
		t.Error("bad layouts accepted")
	}
}

func TestTimeoutEnv(t *testing.T) {
	for v, want := range map[string]time.Duration{"": DefaultTimeout, "30": 30 * time.Second, "2m": 2 * time.Minute, "bad": DefaultTimeout} {
		t.Setenv(EnvTimeout, v)
		if got := Timeout(); got != want {
			t.Errorf("%s=%q: %v, want %v", EnvTimeout, v, got, want)
		}
	}
}

func TestReportParse(t *testing.T) {
	out := "[1,0]<stdout>:=== RUN   TestX\n" +
		"[1,1]<stderr>:oops\n" +
		"[1,1]<stdout>:mpitest-result rank=1 size=2 host=node1 status=fail\n" +
		"[1,0]<stdout>:mpitest-result rank=0 size=2 host=node1 status=ok\n" +
		"--------\nMPI_ABORT was invoked on rank 1\n"
	r := &Report{Layout: Even(1, 2)}
	r.parse([]byte(out))
	if f := r.Failed(); len(f) != 1 || f[0] != 1 {
		t.Errorf("failed %v", f)
	}
	if r.Ranks[0].Status != "ok" || r.Ranks[1].Host != "node1" || len(r.Launcher) != 2 {
		t.Errorf("parse: %+v", r)
	}
	text := r.FailureText()
	if !strings.Contains(text, "[rank 1] oops") || strings.Contains(text, "[rank 0] ===") || !strings.Contains(text, "[mpirun] MPI_ABORT") {
		t.Errorf("FailureText:\n%s", text)
	}

	// MPICH's Hydra (mpiexec -prepend-rank): "[rank] text"; its own
	// messages carry "[mpiexec@host]" or "[proxy:...]".
	out = "[0] === RUN   TestX\n" +
		"[1] oops\n" +
		"[1] mpitest-result rank=1 size=2 host=node2 status=fail\n" +
		"[0] mpitest-result rank=0 size=2 host=node1 status=ok\n" +
		"[proxy:0:1@node2] HYD_pmcd_pmip_control_cmd_cb: assert (!closed) failed\n" +
		"[mpiexec@vm] main: process manager error waiting for completion\n"
	r = &Report{Layout: Even(2, 1)}
	r.parse([]byte(out))
	if f := r.Failed(); len(f) != 1 || f[0] != 1 {
		t.Errorf("hydra: failed %v", f)
	}
	if r.Ranks[0].Status != "ok" || r.Ranks[1].Host != "node2" || len(r.Ranks[1].Lines) != 2 || len(r.Launcher) != 2 {
		t.Errorf("hydra parse: %+v", r)
	}
}
