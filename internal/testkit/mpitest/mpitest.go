// Package mpitest runs a test body on several MPI ranks spread over fake
// nodes, from inside go test:
//
//	func TestAllreduce(t *testing.T) {
//		mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
//			// runs on 4 ranks, 2 per fake node
//		})
//	}
//
// # How it works
//
// In the go test process (the parent), Run re-executes the test binary
// under dpmlrun's launcher, with -test.run matching exactly this test (and
// subtest), and with DPML_MPITEST=<layout>#<n>#<test name> in the
// environment, where n counts the Run calls of the test. In those child processes (the ranks),
// the test function runs again and reaches the same Run calls; only the
// n-th one acts: it locks its goroutine to its OS thread, initializes MPI
// (ThreadSerialized, unless MPI is already initialized), runs body and
// finalizes MPI on the same thread right after body. Every other Run call
// in a child returns at once. So a test function may call Run several times
// with different layouts; it must reach its Run calls in the same order on
// every execution.
//
// A rank whose body fails (t.Error, t.Fatal or a panic) prints a result
// line and calls MPI_Abort, so mpirun stops every rank at once instead of
// letting the others hang in a collective. The parent fails the test with
// the output of each failing rank (Open MPI's mpirun --tag-output or
// Hydra's -prepend-rank identifies the rank of every line) and the
// launcher's own messages. A job that runs longer than
// the timeout (DefaultTimeout, or DPML_MPITEST_TIMEOUT, capped by go test's
// -timeout) is stopped (SIGTERM, then SIGKILL of the launcher's process
// group) and the test fails. t.Skip in body must be collective: all ranks
// skip, then the parent test is skipped.
//
// # The launcher
//
// The launcher is the test binary itself: this package's init hands the
// process to internal/tools/launch when the binary is started with launch's
// hidden arguments, so no separate dpmlrun binary has to be built. It
// launches with the MPI the test binary links: Open MPI's mpirun, or with
// the build tag mpich (go test -tags mpich) MPICH's Hydra mpiexec. When
// DPMLRUN names a dpmlrun binary, that one is used instead. The ranks of a
// fake node share its cores (yield-when-idle when they outnumber them), so
// 4 or 5 ranks on a 2-core machine work.
//
// TestMain may use Main, which finalizes MPI at exit if the test process
// initialized it on the main thread; it is optional.
package mpitest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/tools/launch"
	"github.com/dpmlgo/dpml/mpi"
)

func init() {
	// The test binary is its own launcher and launch agent.
	launch.Dispatch(os.Args)
}

// Environment variables.
const (
	// EnvMPITest is set by the parent in the ranks (config.MPITest); see
	// Key.
	EnvMPITest = config.MPITest
	// EnvTimeout overrides DefaultTimeout ("300s", or seconds: "300").
	EnvTimeout = config.MPITestLimit
	// EnvDpmlrun names a dpmlrun binary to launch with instead of the
	// test binary itself.
	EnvDpmlrun = "DPMLRUN"
)

// DefaultTimeout bounds one multi-rank run.
const DefaultTimeout = 120 * time.Second

// Layout is the shape of a job: PPN[i] ranks on fake node i+1. Ranks are
// numbered node by node.
type Layout struct {
	PPN []int
}

// Even is nodes nodes with ppn ranks each.
func Even(nodes, ppn int) Layout {
	l := Layout{PPN: make([]int, nodes)}
	for i := range l.PPN {
		l.PPN[i] = ppn
	}
	return l
}

// Nodes is the number of fake nodes.
func (l Layout) Nodes() int { return len(l.PPN) }

// Size is the number of ranks.
func (l Layout) Size() int { return launch.Sum(l.PPN) }

// String is "2x2" for an even layout and "3,2" for an uneven one.
func (l Layout) String() string {
	if len(l.PPN) == 0 {
		return "empty"
	}
	p := launch.FormatPPN(l.PPN)
	if !strings.Contains(p, ",") {
		return strconv.Itoa(len(l.PPN)) + "x" + p
	}
	return p
}

// NodeOf returns the fake node index (0-based) of rank r.
func (l Layout) NodeOf(r int) int {
	for i, p := range l.PPN {
		if r < p {
			return i
		}
		r -= p
	}
	return -1
}

func (l Layout) validate() error {
	if len(l.PPN) == 0 {
		return fmt.Errorf("mpitest: layout has no nodes")
	}
	for _, p := range l.PPN {
		if p < 1 {
			return fmt.Errorf("mpitest: layout %v: every node needs at least one rank", l.PPN)
		}
	}
	return nil
}

// Run runs body on nodes x ppn ranks; see the package documentation.
func Run(t *testing.T, nodes, ppn int, body func(t *testing.T, world *mpi.Comm)) {
	t.Helper()
	if nodes < 1 || ppn < 1 {
		t.Fatalf("mpitest.Run: nodes %d, ppn %d: both must be at least 1", nodes, ppn)
	}
	RunLayout(t, Even(nodes, ppn), body)
}

// RunLayout runs body on the ranks of layout l (uneven layouts allowed:
// Layout{PPN: []int{3, 2}}).
func RunLayout(t *testing.T, l Layout, body func(t *testing.T, world *mpi.Comm)) {
	t.Helper()
	RunLayoutThread(t, l, mpi.ThreadSerialized, body)
}

// RunLayoutThread is RunLayout with MPI initialized at thread level level
// in the ranks (ThreadMultiple for a body whose goroutines make MPI calls
// at the same time). Every rank skips when the library provides less.
func RunLayoutThread(t *testing.T, l Layout, level mpi.ThreadLevel, body func(t *testing.T, world *mpi.Comm)) {
	t.Helper()
	if err := l.validate(); err != nil {
		t.Fatal(err)
	}
	call := nextCall(t)
	if key, ok := os.LookupEnv(EnvMPITest); ok {
		runRank(t, l, call, key, level, body)
		return
	}
	timeout := Timeout()
	if d, ok := t.Deadline(); ok {
		// Leave go test time to report our failure before its own
		// timeout panics.
		if left := time.Until(d) - 10*time.Second; left < timeout {
			timeout = max(left, time.Second)
		}
	}
	var args []string
	if testing.Short() {
		args = append(args, "-test.short")
	}
	rep, err := Exec(Options{Test: t.Name(), Call: call, Layout: l, Timeout: timeout, Args: args})
	if err != nil {
		if rep != nil {
			t.Fatalf("%v\n%s", err, rep.FailureText())
		}
		t.Fatal(err)
	}
	if testing.Verbose() {
		t.Logf("mpitest: %s ok in %v\n%s", l, rep.Elapsed.Round(time.Millisecond), rep.AllOutput())
	}
	if rep.AllSkipped() {
		t.Skipf("mpitest: every rank skipped:\n%s", rep.RankOutput(0))
	}
}

var (
	callsMu sync.Mutex
	calls   = map[*testing.T]int{}
)

// nextCall numbers the Run calls of one test execution (1, 2, ...).
func nextCall(t *testing.T) int {
	callsMu.Lock()
	defer callsMu.Unlock()
	n, seen := calls[t]
	if !seen {
		t.Cleanup(func() {
			callsMu.Lock()
			delete(calls, t)
			callsMu.Unlock()
		})
	}
	calls[t] = n + 1
	return n + 1
}

// Key is the value of DPML_MPITEST for the call-th Run call, with layout
// l, of the test named test: "<layout>#<call>#<test>".
func Key(l Layout, call int, test string) string {
	return l.String() + "#" + strconv.Itoa(call) + "#" + test
}

// parseKey splits a Key into the layout string, the call and the test.
func parseKey(key string) (layout string, call int, test string, ok bool) {
	layout, rest, ok1 := strings.Cut(key, "#")
	n, test, ok2 := strings.Cut(rest, "#")
	call, err := strconv.Atoi(n)
	return layout, call, test, ok1 && ok2 && err == nil
}

// Result line a rank prints after its body: "mpitest-result rank=R size=S host=H status=ok|fail|skip".
const resultPrefix = "mpitest-result "

// runRank is Run inside a rank.
func runRank(t *testing.T, l Layout, call int, key string, level mpi.ThreadLevel, body func(*testing.T, *mpi.Comm)) {
	t.Helper()
	layout, n, test, ok := parseKey(key)
	if !ok {
		t.Fatalf("mpitest: bad %s=%q", EnvMPITest, key)
	}
	if test != t.Name() || n != call {
		return // another Run call (of this test or a subtest) is the one launched
	}
	if layout != l.String() {
		t.Fatalf("mpitest: this rank was launched for Run call %d of %s with layout %s, but that call has layout %s: the test must make the same Run calls on every execution", call, test, layout, l)
	}
	runtime.LockOSThread() // the thread dies with the test goroutine
	ours := false
	provided := level
	if !mpi.Initialized() {
		var err error
		if provided, err = mpi.InitThread(level); err != nil {
			fmt.Printf("%sstatus=fail init error: %v\n", resultPrefix, err)
			t.Fatalf("mpitest: MPI init: %v", err)
		}
		ours = true
	}
	world := mpi.World()
	host, _ := os.Hostname()
	finished := false
	defer func() {
		status := "ok"
		if r := recover(); r != nil {
			t.Errorf("panic: %v\n%s", r, debug.Stack())
			status = "fail"
		} else if t.Failed() {
			status = "fail"
		} else if t.Skipped() {
			status = "skip"
		} else if !finished {
			status = "fail" // runtime.Goexit without FailNow/SkipNow
		}
		fmt.Printf("%srank=%d size=%d host=%s status=%s\n", resultPrefix, world.Rank(), world.Size(), host, status)
		if status == "fail" {
			// Stop every rank now; the parent reports this rank's output.
			_ = mpi.Abort(world, 1)
			os.Exit(1)
		}
		if ours {
			if err := mpi.Finalize(); err != nil {
				t.Errorf("mpitest: MPI finalize: %v", err)
			}
		}
	}()
	if world.Size() != l.Size() {
		t.Fatalf("mpitest: MPI world has %d ranks, layout %s wants %d", world.Size(), l, l.Size())
	}
	if provided < level {
		t.Skipf("mpitest: MPI provides thread level %v, the test needs %v", provided, level)
	}
	body(t, world)
	finished = true
}

// Main can serve as TestMain: func TestMain(m *testing.M) { mpitest.Main(m) }.
// It runs the tests and, if MPI was initialized and not finalized (by code
// outside Run, on the main goroutine), finalizes it before exiting.
//
// The ranks keep no machine profile (DPML_PROFILE=off unless set): a
// profile left by one test would change what the next one's tuner starts
// from.
func Main(m *testing.M) {
	if _, ok := os.LookupEnv("DPML_PROFILE"); !ok {
		os.Setenv("DPML_PROFILE", "off")
	}
	code := m.Run()
	if mpi.Initialized() && !mpi.Finalized() {
		_ = mpi.Finalize()
	}
	os.Exit(code)
}

// Timeout returns the bound of one run: DPML_MPITEST_TIMEOUT when set, else
// DefaultTimeout.
func Timeout() time.Duration {
	s := strings.TrimSpace(os.Getenv(EnvTimeout))
	if s == "" {
		return DefaultTimeout
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return DefaultTimeout
}

// RunPattern is the -test.run pattern that selects exactly the test or
// subtest named name (a t.Name()).
func RunPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// Options describe one launch of a test's ranks (see Exec).
type Options struct {
	Test    string        // t.Name() of the test to run in the ranks
	Call    int           // which Run call of that test acts (1-based; 0 means 1)
	Layout  Layout        // the job's shape
	Timeout time.Duration // 0: Timeout()
	Env     []string      // NAME=value pairs for every rank
	Binary  string        // test binary (default: this executable)
	Args    []string      // extra flags for the test binary
	// RankTimeout is the ranks' own go test -timeout, which makes a hung
	// rank print its goroutines. 0: Timeout less a quarter (at most 10 s),
	// so it fires first; negative: none.
	RankTimeout time.Duration
}

// Exec runs test o.Test of the test binary on o.Layout's ranks and waits.
// The error is nil when every rank passed or skipped; otherwise it says
// what went wrong and the Report (non-nil once the job was started) holds
// the output. It is the machinery under Run, exported to test the harness.
func Exec(o Options) (*Report, error) {
	if err := o.Layout.validate(); err != nil {
		return nil, err
	}
	if o.Call == 0 {
		o.Call = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = Timeout()
	}
	bin := o.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("mpitest: cannot find the test binary: %v", err)
		}
		bin = exe
	}
	launcher := []string{bin, launch.MainArg}
	if d := os.Getenv(EnvDpmlrun); d != "" {
		launcher = []string{d}
	}
	key := Key(o.Layout, o.Call, o.Test)
	rankTimeout := o.RankTimeout
	if rankTimeout == 0 {
		rankTimeout = o.Timeout - min(o.Timeout/4, 10*time.Second)
	} else if rankTimeout < 0 {
		rankTimeout = 0 // go test: no timeout
	}
	// The launcher of the MPI this test binary links (build tag mpich:
	// MPICH's Hydra), each output line tagged with its rank.
	flavor := launch.BuildFlavor
	args := append(append([]string(nil), launcher[1:]...),
		"-mpi", string(flavor),
		"-ppn", launch.FormatPPN(o.Layout.PPN), "-nodes", strconv.Itoa(o.Layout.Nodes()), "--")
	args = append(args, launch.TagOutputArgs(flavor)...)
	args = append(args, launch.ExportArgs(flavor, EnvMPITest)...)
	env := append(os.Environ(), EnvMPITest+"="+key)
	for _, kv := range o.Env {
		name, _, _ := strings.Cut(kv, "=")
		args = append(args, launch.ExportArgs(flavor, name)...)
		env = append(env, kv)
	}
	args = append(args, "--", bin,
		"-test.run="+RunPattern(o.Test), "-test.v", "-test.count=1",
		"-test.timeout="+rankTimeout.String())
	args = append(args, o.Args...)

	cmd := exec.Command(launcher[0], args...)
	cmd.Env = env
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Own process group, so a timeout can kill the whole launcher tree;
	// Pdeathsig stops the job if this test process dies. Pdeathsig fires
	// when the starting thread exits, so stay on it until the end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = 5 * time.Second
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	rep := &Report{Layout: o.Layout}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mpitest: start launcher: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(o.Timeout):
		rep.TimedOut = true
		// The launcher forwards SIGTERM to mpirun, which stops the job,
		// and then cleans up; kill everything if that takes too long.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr = <-done:
		case <-time.After(launch.KillGrace + 5*time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-done
		}
	}
	rep.Elapsed = time.Since(start)
	rep.ExitCode = cmd.ProcessState.ExitCode()
	rep.parse(out.Bytes())

	switch {
	case rep.TimedOut:
		return rep, fmt.Errorf("mpitest: %s on %s timed out after %v (set %s to change the bound)", o.Test, o.Layout, o.Timeout, EnvTimeout)
	case werr != nil && rep.ExitCode < 0:
		return rep, fmt.Errorf("mpitest: %s on %s: launcher: %v", o.Test, o.Layout, werr)
	case werr != nil:
		if rep.rankTimedOut() {
			return rep, fmt.Errorf("mpitest: %s on %s: the ranks hit their go test -timeout of %v (a rank hangs; each printed its goroutines)", o.Test, o.Layout, rankTimeout)
		}
		if f := rep.Failed(); len(f) > 0 {
			return rep, fmt.Errorf("mpitest: %s on %s failed on rank(s) %v (exit code %d)", o.Test, o.Layout, f, rep.ExitCode)
		}
		return rep, fmt.Errorf("mpitest: %s on %s failed (exit code %d)", o.Test, o.Layout, rep.ExitCode)
	}
	if missing := rep.missing(); len(missing) > 0 {
		return rep, fmt.Errorf("mpitest: %s on %s: rank(s) %v reported no result (does -test.run=%s select the test?)", o.Test, o.Layout, missing, RunPattern(o.Test))
	}
	if f := rep.Failed(); len(f) > 0 {
		return rep, fmt.Errorf("mpitest: %s on %s failed on rank(s) %v", o.Test, o.Layout, f)
	}
	return rep, nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// Report is what a multi-rank run printed, split by rank.
type Report struct {
	Layout   Layout
	Ranks    []RankReport // index = rank
	Launcher []string     // lines not tagged with a rank (mpirun, dpmlrun)
	ExitCode int          // the launcher's (= mpirun's) exit code; -1 if killed
	Elapsed  time.Duration
	TimedOut bool
}

// RankReport is one rank's output and result.
type RankReport struct {
	Rank   int
	Host   string // from the result line
	Status string // "ok", "fail", "skip", or "" when the rank printed no result
	Lines  []string
}

// Open MPI's mpirun --tag-output: "[jobid,rank]<stdout>:text"; Hydra's
// mpiexec -prepend-rank: "[rank] text" (Hydra's own messages start with
// "[mpiexec@host]" or "[proxy:...]", never a bare number).
var tagRe = regexp.MustCompile(`^(?:\[\d+,(\d+)\]<(?:stdout|stderr|stddiag)>:|\[(\d+)\] )(.*)$`)

// parse splits the launcher's output by rank.
func (r *Report) parse(out []byte) {
	r.Ranks = make([]RankReport, r.Layout.Size())
	for i := range r.Ranks {
		r.Ranks[i].Rank = i
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		m := tagRe.FindStringSubmatch(line)
		if m == nil {
			r.Launcher = append(r.Launcher, line)
			continue
		}
		rank, _ := strconv.Atoi(m[1] + m[2]) // one of the two is empty
		if rank < 0 || rank >= len(r.Ranks) {
			r.Launcher = append(r.Launcher, line)
			continue
		}
		text := m[3]
		rr := &r.Ranks[rank]
		rr.Lines = append(rr.Lines, text)
		if rest, ok := strings.CutPrefix(text, resultPrefix); ok {
			for _, f := range strings.Fields(rest) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "host":
					rr.Host = v
				case "status":
					rr.Status = v
				}
			}
		}
	}
}

// Failed lists the ranks that reported a failure.
func (r *Report) Failed() []int {
	var f []int
	for _, rr := range r.Ranks {
		if rr.Status == "fail" {
			f = append(f, rr.Rank)
		}
	}
	return f
}

func (r *Report) rankTimedOut() bool {
	for _, rr := range r.Ranks {
		for _, l := range rr.Lines {
			if strings.HasPrefix(l, "panic: test timed out after") {
				return true
			}
		}
	}
	return false
}

func (r *Report) missing() []int {
	var m []int
	for _, rr := range r.Ranks {
		if rr.Status == "" {
			m = append(m, rr.Rank)
		}
	}
	return m
}

// AllSkipped reports whether every rank skipped.
func (r *Report) AllSkipped() bool {
	for _, rr := range r.Ranks {
		if rr.Status != "skip" {
			return false
		}
	}
	return len(r.Ranks) > 0
}

// RankOutput is rank's output, each line prefixed with "[rank R] ".
func (r *Report) RankOutput(rank int) string {
	if rank < 0 || rank >= len(r.Ranks) {
		return ""
	}
	return prefixLines(r.Ranks[rank].Lines, fmt.Sprintf("[rank %d] ", rank), 0)
}

// AllOutput is every rank's output, rank by rank, then the launcher's.
func (r *Report) AllOutput() string {
	var b strings.Builder
	for i := range r.Ranks {
		b.WriteString(r.RankOutput(i))
	}
	b.WriteString(prefixLines(r.Launcher, "[mpirun] ", 0))
	return b.String()
}

// maxLines bounds the lines per rank in FailureText.
const maxLines = 400

// FailureText describes a failed run: the output of every failing rank (or
// of every rank when none reported a failure), the status of the others,
// and the launcher's messages.
func (r *Report) FailureText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "layout %s (%d ranks), exit code %d, %v", r.Layout, r.Layout.Size(), r.ExitCode, r.Elapsed.Round(time.Millisecond))
	if r.TimedOut {
		b.WriteString(", timed out")
	}
	b.WriteString("\n")
	failed := r.Failed()
	show := map[int]bool{}
	for _, f := range failed {
		show[f] = true
	}
	if len(failed) == 0 {
		for i := range r.Ranks {
			show[i] = true
		}
	}
	var others []string
	for i, rr := range r.Ranks {
		if show[i] {
			continue
		}
		st := rr.Status
		if st == "" {
			st = "no result (stopped)"
		}
		others = append(others, fmt.Sprintf("%d: %s", i, st))
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "other ranks: %s\n", strings.Join(others, ", "))
	}
	keys := make([]int, 0, len(show))
	for k := range show {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, i := range keys {
		rr := r.Ranks[i]
		st := rr.Status
		if st == "" {
			st = "no result"
		}
		fmt.Fprintf(&b, "--- rank %d (node%d%s) %s:\n", i, r.Layout.NodeOf(i)+1, hostNote(rr.Host, r.Layout.NodeOf(i)), st)
		b.WriteString(prefixLines(rr.Lines, fmt.Sprintf("[rank %d] ", i), maxLines))
	}
	if len(r.Launcher) > 0 {
		b.WriteString("--- launcher:\n")
		b.WriteString(prefixLines(r.Launcher, "[mpirun] ", maxLines))
	}
	return b.String()
}

func hostNote(host string, node int) string {
	if host == "" || host == "node"+strconv.Itoa(node+1) {
		return ""
	}
	return ", host " + host
}

func prefixLines(lines []string, prefix string, limit int) string {
	var b strings.Builder
	if limit > 0 && len(lines) > limit {
		fmt.Fprintf(&b, "%s... %d earlier lines left out\n", prefix, len(lines)-limit)
		lines = lines[len(lines)-limit:]
	}
	for _, l := range lines {
		b.WriteString(prefix)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// InRank reports whether this process is a rank launched by Run.
func InRank() bool {
	_, ok := os.LookupEnv(EnvMPITest)
	return ok
}
