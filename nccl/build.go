package nccl

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
)

// DefaultVariant is ncclsweep's name of NCCL's default: no plugin answer
// on a communicator made without settings. It is the baseline the
// plugin is judged against.
const DefaultVariant = "nccl@dflt"

// BuildOptions control BuildTable.
type BuildOptions struct {
	// Comm is the communicator setting (ncclsweep's COMM: dflt, N, minN)
	// whose rows make the table: the plugin's answers only take effect up
	// to the communicator's channels, so the table is for communicators
	// made like that one. "" takes the one setting the fixed-answer rows
	// share.
	Comm string
	// Improve: a fixed answer replaces NCCL's own only when it is faster
	// by more than this fraction (0: costmodel's, 3%), so the table
	// deviates from NCCL where the sweep shows headroom, not noise.
	Improve float64
	// Command and Note go into the table's provenance.
	Command, Note string
}

// Pick is the table's answer for one size bucket and the evidence.
type Pick struct {
	Coll   string
	Log2   int
	Sizes  []int64
	Choice Decision
	// Time is the choice's median per call in seconds (the mean over the
	// bucket's sizes); Native NCCL's own on the same communicator, Best
	// the fastest fixed answer and BestTime its time, Default nccl@dflt's
	// (the criterion's baseline); 0 where not measured.
	Time, Native, BestTime, Default float64
	Best                            Decision
}

// BuildTable turns a sweep into a tuning table for the plugin: for each
// size bucket of the sweep, the fixed answer (C@COMM rows) that beat
// NCCL's own choice on the same communicators (nccl@COMM) by more than
// Improve, else "native"; but where NCCL's own choice on those
// communicators was slower than NCCL's default (nccl@dflt), the fastest
// fixed answer that beats it, margin or not. Rows whose result check failed never count. The
// entries name the collective (the sweep's, allreduce), the layout of the
// sweep, and every measured arm (Entry.Measured); the table has no model,
// so the plugin answers NCCL's default outside the sweep's collective and
// layout.
//
// A sweep of several collectives gets entries for each, built from that
// collective's rows alone.
func BuildTable(sw *Sweep, opt BuildOptions) (*costmodel.Table, []Pick, error) {
	colls := sw.Colls()
	if len(colls) <= 1 {
		return buildTableColl(sw, opt)
	}
	var tb *costmodel.Table
	var picks []Pick
	for _, c := range colls {
		t, p, err := buildTableColl(sw.ForColl(c), opt)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c, err)
		}
		if tb == nil {
			tb = t
		} else {
			tb.Entries = append(tb.Entries, t.Entries...)
		}
		picks = append(picks, p...)
	}
	return tb, picks, nil
}

func buildTableColl(sw *Sweep, opt BuildOptions) (*costmodel.Table, []Pick, error) {
	comm := opt.Comm
	if comm == "" {
		comms := map[string]bool{}
		for i := range sw.Rows {
			if _, ok := sw.Rows[i].Fixed(); ok {
				comms[sw.Rows[i].Comm] = true
			}
		}
		if len(comms) != 1 {
			return nil, nil, fmt.Errorf("nccl: the fixed-answer rows use %d communicator settings %v: name one (-comm)", len(comms), keys(comms))
		}
		for c := range comms {
			comm = c
		}
	}
	improve := opt.Improve
	if improve == 0 {
		improve = learn.DefaultConfig().Improve
	}
	ranks, nodes := 0, 0
	bySize := map[int64][]*SweepRow{}
	for i := range sw.Rows {
		r := &sw.Rows[i]
		if r.Comm != comm && r.Variant != DefaultVariant {
			continue
		}
		if ranks == 0 {
			ranks, nodes = r.Ranks, r.Nodes
		} else if r.Ranks != ranks || r.Nodes != nodes {
			return nil, nil, fmt.Errorf("nccl: rows of %d ranks on %d nodes and of %d on %d: one layout per table", ranks, nodes, r.Ranks, r.Nodes)
		}
		bySize[r.Bytes] = append(bySize[r.Bytes], r)
	}
	if ranks == 0 {
		return nil, nil, fmt.Errorf("nccl: no rows for communicator %q", comm)
	}
	lay := Layout{Ranks: ranks, Nodes: nodes}
	buckets := map[int][]int64{}
	for n := range bySize {
		b := Bucket(uint64(n))
		buckets[b] = append(buckets[b], n)
	}
	var bs []int
	for b := range buckets {
		bs = append(bs, b)
		sort.Slice(buckets[b], func(i, j int) bool { return buckets[b][i] < buckets[b][j] })
	}
	sort.Ints(bs)

	coll, err := ParseColl(orDefault(sw.Meta["coll"], "allreduce"))
	if err != nil {
		return nil, nil, err
	}
	tb := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: provenance(sw, lay, comm, opt)}
	var picks []Pick
	for _, b := range bs {
		sizes := buckets[b]
		// arm -> summed seconds over the bucket's sizes; complete only.
		type arm struct {
			d       Decision
			native  bool
			sum     float64
			n, reps int
		}
		arms := map[string]*arm{}
		dflt, dfltN := 0.0, 0
		for _, n := range sizes {
			for _, r := range bySize[n] {
				if r.Check == "fail" {
					continue
				}
				if r.Variant == DefaultVariant {
					dflt += r.Seconds()
					dfltN++
				}
				if r.Comm != comm {
					continue
				}
				var a *arm
				if r.Policy == "nccl" {
					if a = arms["native"]; a == nil {
						a = &arm{d: Native, native: true}
						arms["native"] = a
					}
				} else if d, ok := r.Fixed(); ok {
					if a = arms[d.String()]; a == nil {
						a = &arm{d: d}
						arms[d.String()] = a
					}
				} else {
					continue
				}
				a.sum += r.Seconds()
				a.n++
				a.reps = minPositive(a.reps, r.Reps)
			}
		}
		var native, best *arm
		var measured []costmodel.MeasuredArm
		names := keys(arms)
		sort.Slice(names, func(i, j int) bool { return armLess(arms[names[i]].d, arms[names[j]].d) })
		for _, name := range names {
			a := arms[name]
			if a.n != len(sizes) {
				continue // not measured at every size of the bucket
			}
			measured = append(measured, measuredArm(a.d, a.sum/float64(a.n), a.reps))
			if a.native {
				native = a
			} else if best == nil || a.sum < best.sum {
				best = a
			}
		}
		if native == nil && best == nil {
			continue
		}
		p := Pick{Coll: coll.String(), Log2: b, Sizes: sizes}
		if dfltN == len(sizes) {
			p.Default = dflt / float64(dfltN)
		}
		if best != nil {
			p.Best, p.BestTime = best.d, best.sum/float64(best.n)
		}
		chosen := best
		if native != nil {
			p.Native = native.sum / float64(native.n)
			if best == nil || !(best.sum < native.sum*(1-improve)) {
				chosen = native
			}
			// The margin keeps NCCL's own choice against noise, but only
			// where that choice is not itself behind NCCL's default on
			// default communicators (more channels set up can make NCCL
			// pick worse): there the fastest fixed answer is taken.
			if chosen == native && best != nil && best.sum < native.sum && p.Default > 0 && p.Native > p.Default {
				chosen = best
			}
		}
		p.Choice, p.Time = chosen.d, chosen.sum/float64(chosen.n)
		picks = append(picks, p)
		en := costmodel.Entry{
			Elem: elemOf(sw.Meta["dtype"]), Op: opOf(sw.Meta["op"]), Log2Bytes: b, Nodes: lay.Nodes, PPN: lay.PPN(),
			Variant: "native", Leaders: 1, Pipeline: 1, Estimate: p.Time, Samples: uint64(chosen.reps), State: "frozen",
			Coll: coll.String(), Algo: AlgoName(p.Choice.Algo), Proto: ProtoName(p.Choice.Proto), Measured: measured,
		}
		if p.Choice.Channels > 0 {
			en.Variant, en.Leaders = "dpml", p.Choice.Channels
		}
		tb.Entries = append(tb.Entries, en)
	}
	if len(tb.Entries) == 0 {
		return nil, nil, fmt.Errorf("nccl: no size has both NCCL's own and fixed answers measured on communicator %q", comm)
	}
	return tb, picks, nil
}

func measuredArm(d Decision, sec float64, reps int) costmodel.MeasuredArm {
	m := costmodel.MeasuredArm{Variant: "native", Leaders: 1, Pipeline: 1, Estimate: sec, Samples: reps,
		Algo: AlgoName(d.Algo), Proto: ProtoName(d.Proto)}
	if d.Channels > 0 {
		m.Variant, m.Leaders = "dpml", d.Channels
	}
	return m
}

// armLess orders answers: native first, then by channels, algorithm, protocol.
func armLess(a, b Decision) bool {
	if a.IsNative() != b.IsNative() {
		return a.IsNative()
	}
	if a.Channels != b.Channels {
		return a.Channels < b.Channels
	}
	if a.Algo != b.Algo {
		return a.Algo < b.Algo
	}
	return a.Proto < b.Proto
}

func minPositive(a, b int) int {
	if a <= 0 {
		return b
	}
	return min(a, b)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func elemOf(dtype string) string {
	if e, err := costmodel.ParseElemClass(dtype); err == nil {
		return e.String()
	}
	return costmodel.ElemAny.String()
}

func opOf(op string) string {
	switch strings.ToLower(op) {
	case "sum", "prod", "avg":
		return costmodel.OpArith.String()
	case "min", "max":
		return costmodel.OpMinMax.String()
	}
	return costmodel.OpAny.String()
}

// VersionString formats NCCL's version code (ncclGetVersion: 22803 for
// 2.28.3; 2.8 and older used major*1000 + minor*100 + patch).
func VersionString(code string) string {
	v, err := strconv.Atoi(code)
	if err != nil || v <= 0 {
		return code
	}
	if v >= 10000 {
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
}

func provenance(sw *Sweep, lay Layout, comm string, opt BuildOptions) costmodel.Provenance {
	m := sw.Meta
	host := orDefault(m["host"], "?")
	if g := m["gpus"]; g != "" {
		host += fmt.Sprintf(" (%s x %s)", g, orDefault(m["gpu0"], "GPU"))
	}
	cmd := m["command"]
	if opt.Command != "" {
		cmd = strings.TrimSpace(cmd + " | " + opt.Command)
	}
	note := fmt.Sprintf("NCCL tuner table (package nccl): leaders = channels per call, variant native = NCCL's own choice; "+
		"measured on communicators %q (ncclsweep COMM; set up the same way, e.g. NCCL_MIN_NCHANNELS for minN, for the answers to take effect)", comm)
	if opt.Note != "" {
		note += "; " + opt.Note
	}
	return costmodel.Provenance{
		Host:    host,
		Layout:  fmt.Sprintf("%s, %s", lay, comm),
		MPI:     "NCCL " + VersionString(m["nccl_version"]) + ", CUDA runtime " + orDefault(m["cuda_runtime"], "?"),
		Date:    m["date"],
		Command: cmd,
		Note:    note,
	}
}

// Speedup returns how much faster variant v ran than base at size n (base
// median / v median), and whether both were measured (and passed their
// checks).
func (sw *Sweep) Speedup(v, base string, n int64) (float64, bool) {
	a, ok1 := sw.Row(v, n)
	b, ok2 := sw.Row(base, n)
	if !ok1 || !ok2 || a.Check == "fail" || b.Check == "fail" || !(a.Median > 0) {
		return math.NaN(), false
	}
	return b.Median / a.Median, true
}
