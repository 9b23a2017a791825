//go:build dpmltrace && amd64

package dpml

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/runtime/dropinhook"
	"github.com/dpmlgo/dpml/internal/runtime/tsc"
)

// traceBuild: see trace_off.go.
const traceBuild = true

// A diagnostic build (go build -tags dpmltrace) records, for the last
// traceCalls calls of each communicator, the time stamp counter at each
// point of the call (tracePoint) and writes them at Close to DPML_TRACE
// (%r: the rank in the communicator). bench/diag/trace.py reads the files of
// all ranks and splits the back-to-back period into its steps. The default
// build has none of it (trace_off.go): every mark is an empty function.

const traceCalls = 8192

type tracer struct {
	rec        [][tpCount]int64
	n          int   // calls recorded
	ns0, tsc0  int64 // calibration at the first call
	path       string
	configured bool
}

// rdtsc is the time stamp counter (internal/runtime/tsc).
func rdtsc() int64 { return int64(tsc.Read()) }

func (c *Comm) mark(p tracePoint) {
	if c.tracing() {
		c.trc.rec[c.trc.n%traceCalls][p] = rdtsc()
	}
}

func init() {
	dropinhook.TraceC = func(c any, enter, toGo, back, leave int64) { c.(*Comm).traceC(enter, toGo, back, leave) }
}

// traceC records the drop-in library's C steps: enter and toGo of the call
// about to run, back and leave of the previous one (dropinhook.TraceC).
func (c *Comm) traceC(enter, toGo, back, leave int64) {
	if !c.tracing() {
		return
	}
	t := &c.trc
	r := &t.rec[t.n%traceCalls]
	r[tpCEnter], r[tpCGo] = enter, toGo
	if t.n > 0 {
		q := &t.rec[(t.n-1)%traceCalls]
		q[tpCBack], q[tpCLeave] = back, leave
	}
}

// tracing reports whether this Comm records, setting the recorder up at the
// first call.
func (c *Comm) tracing() bool {
	t := &c.trc
	if t.rec == nil {
		if t.configured {
			return false
		}
		t.configured = true
		path, _ := config.Get(config.Trace)
		if path == "" {
			return false
		}
		t.path = strings.ReplaceAll(path, "%r", strconv.Itoa(c.rank))
		t.rec = make([][tpCount]int64, traceCalls)
		t.ns0, t.tsc0 = nanotime(), rdtsc()
	}
	return true
}

// markDone closes the call's record.
func (c *Comm) markDone() {
	if c.trc.rec != nil {
		c.mark(tpExit)
		c.trc.n++
		c.trc.rec[c.trc.n%traceCalls] = [tpCount]int64{}
	}
}

// dumpTrace writes the records: a header with the calibration (nanotime and
// TSC at the first call and now), then one line per call, oldest first:
// the call's number, local rank, tree role, then each point's TSC (0: not
// reached).
func (c *Comm) dumpTrace() {
	t := &c.trc
	if t.rec == nil {
		return
	}
	ns1, tsc1 := nanotime(), rdtsc()
	parent := -2 // not a tree plan
	if p := c.memo.pp.p; p.Intra == IntraTree && p.Leaders == 1 {
		parent = c.treeFor(p.Radix, 0).tree.Parent[c.local]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# rank %d local %d ppn %d ns0 %d tsc0 %d ns1 %d tsc1 %d parent %d\n", c.rank, c.local, c.ppn, t.ns0, t.tsc0, ns1, tsc1, parent)
	fmt.Fprintf(&b, "call,%s\n", strings.Join(tracePointNames[:], ","))
	first := max(0, t.n-traceCalls+1)
	for i := first; i < t.n; i++ {
		r := t.rec[i%traceCalls]
		b.WriteString(strconv.Itoa(i))
		for _, v := range r {
			b.WriteByte(',')
			b.WriteString(strconv.FormatInt(v, 10))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(t.path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "dpml: %s: %v\n", config.Trace, err)
	}
	t.rec = nil
}
