package nccl

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/costmodel"
)

// ForcedPick is what a forced-channel sweep says about one collective and
// size bucket: the communicator-wide channel count (ncclsweep's nccl@N
// rows: ncclConfig_t minCTAs = maxCTAs = N) that ran fastest against
// NCCL's default (nccl@dflt), paired run by run.
type ForcedPick struct {
	Coll string
	Log2 int
	// Channels is the answer: Best where it won by the margin in the
	// median and did not lose in any run, else 0 (NCCL's default).
	Channels int
	// Best is the count with the highest median speedup; Speedup that
	// median (default time / its time, over the paired runs and sizes of
	// the bucket), MinSpeedup the smallest of them, Pairs their number.
	Best                int
	Speedup, MinSpeedup float64
	Pairs               int
	// Default and BestTime are median seconds per call.
	Default, BestTime float64
	// Speedups holds the median speedup of every forced count measured
	// in the bucket (FitFloor compares counts across buckets with it).
	Speedups map[int]float64
	// AtDefault: Channels is the count of NCCL's default communicator,
	// answered where the channel floor would otherwise make NCCL's own
	// choice slower than on a default communicator (AnswerDefault);
	// FloorSpeedup is the floor's count's median speedup in the bucket.
	AtDefault    bool
	FloorSpeedup float64
}

// FitOptions control FitForced.
type FitOptions struct {
	// Improve: a forced count replaces NCCL's default only where its
	// median speedup is at least 1 + Improve (0: DefaultFitImprove) and
	// it was not slower than the default in any run.
	Improve float64
}

// DefaultFitImprove is FitForced's margin: 3%, above the run-to-run
// noise of NCCL's bus bandwidth on one machine, so that a kept count does
// not fall below 0.98 x the default by chance.
const DefaultFitImprove = 0.03

// FitForced reads one or more forced-channel sweeps (runs of the same
// machine and layout, e.g. alternated repetitions) and returns, per
// collective and size bucket, the channel count to set. Each run pairs
// its own nccl@dflt and nccl@N medians, so drift between runs cancels;
// rows whose result check failed never count.
func FitForced(sweeps []*Sweep, opt FitOptions) ([]ForcedPick, Layout, error) {
	improve := opt.Improve
	if improve == 0 {
		improve = DefaultFitImprove
	}
	type key struct {
		coll string
		log2 int
	}
	type sample struct{ ratio, dflt, forced float64 }
	ratios := map[key]map[int][]sample{}
	var lay Layout
	for si, sw := range sweeps {
		// run-local index: (coll, bytes) -> variant -> median seconds
		type rk struct {
			coll  string
			bytes int64
		}
		dflt := map[rk]float64{}
		forced := map[rk]map[int]float64{}
		for i := range sw.Rows {
			r := &sw.Rows[i]
			if r.Policy != "nccl" || r.Check == "fail" {
				continue
			}
			if lay.Ranks == 0 {
				lay = Layout{Ranks: r.Ranks, Nodes: r.Nodes}
			} else if r.Ranks != lay.Ranks || r.Nodes != lay.Nodes {
				return nil, lay, fmt.Errorf("nccl: sweep %d: rows of %d ranks on %d nodes and of %d on %d: one layout per fit", si+1, lay.Ranks, lay.Nodes, r.Ranks, r.Nodes)
			}
			k := rk{r.Coll, r.Bytes}
			if r.Comm == "dflt" {
				dflt[k] = r.Seconds()
				continue
			}
			n, err := strconv.Atoi(r.Comm)
			if err != nil || n < 1 || n > MaxChannels {
				continue // minN and other settings are not communicator-wide counts
			}
			if forced[k] == nil {
				forced[k] = map[int]float64{}
			}
			forced[k][n] = r.Seconds()
		}
		for k, byN := range forced {
			d, ok := dflt[k]
			if !ok {
				continue
			}
			bk := key{k.coll, Bucket(uint64(k.bytes))}
			if ratios[bk] == nil {
				ratios[bk] = map[int][]sample{}
			}
			for n, t := range byN {
				ratios[bk][n] = append(ratios[bk][n], sample{d / t, d, t})
			}
		}
	}
	if len(ratios) == 0 {
		return nil, lay, fmt.Errorf("nccl: no size has both nccl@dflt and forced nccl@N rows (pass 0 of bench/nccl/device.sh)")
	}
	var picks []ForcedPick
	for k, byN := range ratios {
		p := ForcedPick{Coll: k.coll, Log2: k.log2, Speedup: math.Inf(-1), Speedups: map[int]float64{}}
		counts := make([]int, 0, len(byN))
		for n := range byN {
			counts = append(counts, n)
		}
		sort.Ints(counts)
		for _, n := range counts {
			ss := byN[n]
			rs := make([]float64, len(ss))
			ds := make([]float64, len(ss))
			fs := make([]float64, len(ss))
			lo := math.Inf(1)
			for i, s := range ss {
				rs[i], ds[i], fs[i] = s.ratio, s.dflt, s.forced
				lo = min(lo, s.ratio)
			}
			med := median(rs)
			p.Speedups[n] = med
			if med > p.Speedup { // ties: the smaller count, met first
				p.Best, p.Speedup, p.MinSpeedup, p.Pairs = n, med, lo, len(ss)
				p.Default, p.BestTime = median(ds), median(fs)
			}
		}
		if p.Speedup >= 1+improve && p.MinSpeedup >= 1 {
			p.Channels = p.Best
		}
		picks = append(picks, p)
	}
	sort.Slice(picks, func(i, j int) bool {
		if picks[i].Coll != picks[j].Coll {
			return collOrder(picks[i].Coll) < collOrder(picks[j].Coll)
		}
		return picks[i].Log2 < picks[j].Log2
	})
	return picks, lay, nil
}

func collOrder(name string) int {
	c, err := ParseColl(name)
	if err != nil {
		return int(NumColls)
	}
	return int(NumColls) - int(c) // allreduce, reducescatter, allgather, reduce, broadcast
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ForcedTable turns FitForced's picks into a tuning table for the plugin
// (DPML_NCCL_TABLE): per collective and bucket, the count or "native".
// The plugin's count only takes effect up to the channels NCCL set up for
// the communicator; the provenance says so.
func ForcedTable(picks []ForcedPick, lay Layout, sw *Sweep, command string) (*costmodel.Table, error) {
	if len(picks) == 0 {
		return nil, fmt.Errorf("nccl: no picks")
	}
	tb := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: provenance(sw, lay, "dflt", BuildOptions{Command: command,
		Note: "fitted from communicator-wide forced channel counts (ncclsweep nccl@N: minCTAs = maxCTAs = N) against NCCL's default, " +
			"paired per run; a per-call count above the communicator's channels is cut down by NCCL"})}
	for _, p := range picks {
		en := costmodel.Entry{
			Elem: elemOf(sw.Meta["dtype"]), Op: opOf(sw.Meta["op"]), Log2Bytes: p.Log2, Nodes: lay.Nodes, PPN: lay.PPN(),
			Variant: "native", Leaders: 1, Pipeline: 1, Estimate: p.Default, Samples: uint64(p.Pairs), State: "frozen",
			Coll: p.Coll,
			Measured: []costmodel.MeasuredArm{
				{Variant: "native", Leaders: 1, Pipeline: 1, Estimate: p.Default, Samples: p.Pairs},
				{Variant: "dpml", Leaders: p.Best, Pipeline: 1, Estimate: p.BestTime, Samples: p.Pairs},
			},
		}
		if p.Channels > 0 {
			en.Variant, en.Leaders, en.Estimate = "dpml", p.Channels, p.BestTime
		}
		tb.Entries = append(tb.Entries, en)
	}
	return tb, nil
}

// FloorBuckets is how many of the largest size buckets a sweep measured,
// per collective, FitFloor reads: the bandwidth regime, where the
// communicator's channels decide what a call can reach.
const FloorBuckets = 3

// FitFloor derives a machine's channel floor from FitForced's picks: the
// forced channel count that does best in the largest FloorBuckets buckets
// of every collective (the highest geometric mean of its median speedups
// over NCCL's default there), provided its median speedup is at least 1 in
// every one of those buckets (it is never slower than the default in the
// median) and at least 1 + Improve in one (0: DefaultFitImprove). It
// returns nil and the reason when no count qualifies. The floor is
// applied at communicator creation (minCTAs); below the largest sizes
// the per-call answers (the picks) choose the count, and NCCL's own
// choice on the floored communicator where they answer nothing.
func FitFloor(picks []ForcedPick, opt FitOptions) (*BuiltinFloor, string) {
	improve := opt.Improve
	if improve == 0 {
		improve = DefaultFitImprove
	}
	byColl := map[string][]ForcedPick{}
	var colls []string
	for _, p := range picks {
		if _, ok := byColl[p.Coll]; !ok {
			colls = append(colls, p.Coll)
		}
		byColl[p.Coll] = append(byColl[p.Coll], p)
	}
	var cells []ForcedPick
	for _, c := range colls {
		ps := byColl[c]
		sort.Slice(ps, func(i, j int) bool { return ps[i].Log2 > ps[j].Log2 })
		cells = append(cells, ps[:min(FloorBuckets, len(ps))]...)
	}
	if len(cells) == 0 {
		return nil, "no picks"
	}
	// Candidates: the counts measured in every cell.
	var counts []int
	for n := range cells[0].Speedups {
		all := true
		for _, c := range cells[1:] {
			if _, ok := c.Speedups[n]; !ok {
				all = false
			}
		}
		if all {
			counts = append(counts, n)
		}
	}
	sort.Ints(counts)
	best, bestGM, bestLo, bestHi := 0, 0.0, 0.0, 0.0
	var why []string
	for _, n := range counts {
		lo, hi, logSum := math.Inf(1), math.Inf(-1), 0.0
		for _, c := range cells {
			s := c.Speedups[n]
			lo, hi = min(lo, s), max(hi, s)
			logSum += math.Log(s)
		}
		gm := math.Exp(logSum / float64(len(cells)))
		switch {
		case !(lo >= 1):
			why = append(why, fmt.Sprintf("%d slower than the default (%.3f)", n, lo))
		case !(hi >= 1+improve):
			why = append(why, fmt.Sprintf("%d at most %.3f", n, hi))
		case gm > bestGM:
			best, bestGM, bestLo, bestHi = n, gm, lo, hi
		}
	}
	lo, hi := cells[0].Log2, cells[0].Log2
	for _, c := range cells {
		lo, hi = min(lo, c.Log2), max(hi, c.Log2)
	}
	where := fmt.Sprintf("the largest %d buckets of %s (2^%d..2^%d)", FloorBuckets, strings.Join(colls, ", "), lo, hi)
	if best == 0 {
		if len(counts) == 0 {
			return nil, "no forced count was measured in " + where
		}
		return nil, fmt.Sprintf("no forced count was at least 1 in every bucket and %.2f in one, in %s: %s", 1+improve, where, strings.Join(why, "; "))
	}
	return &BuiltinFloor{Channels: best, Evidence: fmt.Sprintf("%d channels: median speedup over NCCL's default %.3f to %.3f "+
		"(geometric mean %.3f) in %s, %d run(s); the best of the forced counts %s there", best, bestLo, bestHi, bestGM, where,
		cells[0].Pairs, intList(counts))}, ""
}

// DefaultAnswerMinLog2 is the smallest bucket AnswerDefault answers:
// from 2 MiB NCCL gives a call of the simple and LL128 protocols every
// channel of its communicator (its per-call rule cuts the count only while
// the bytes are below about the channels x 40 KiB), so a floored
// communicator runs such a call on the floor's count where a default one
// runs it on its own, and the default count answered per call gives the
// default communicator's call back. Below, NCCL's cut makes the two alike
// for most sizes, and a per-call count there would also undo the cut.
const DefaultAnswerMinLog2 = 21

// AnswerDefault gives the buckets the picks leave to NCCL (Channels 0)
// from DefaultAnswerMinLog2 up the channel count of NCCL's default
// communicator, def, where the floor's count ran slower than the default
// there in the forced sweep (its median speedup below 1): on a
// communicator created with the floor, NCCL's own choice would be the
// floor's count. Nothing changes without a floor above def (def 0: not
// known).
func AnswerDefault(picks []ForcedPick, floor *BuiltinFloor, def int) []ForcedPick {
	if floor == nil || def <= 0 || floor.Channels <= def {
		return picks
	}
	out := slices.Clone(picks)
	for i := range out {
		p := &out[i]
		if p.Channels != 0 || p.Log2 < DefaultAnswerMinLog2 {
			continue
		}
		if s, ok := p.Speedups[floor.Channels]; ok && s < 1 {
			p.Channels, p.AtDefault, p.FloorSpeedup = def, true, s
		}
	}
	return out
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// FitBuiltin turns FitForced's picks into built-in data for machine m:
// the buckets where a count was chosen, consecutive equal ones merged.
func FitBuiltin(picks []ForcedPick, m Machine, prov BuiltinProvenance) (*Builtin, error) {
	b := &Builtin{Schema: BuiltinSchema, Key: m.normal(), Provenance: prov}
	for _, p := range picks {
		if p.Channels == 0 {
			continue
		}
		n := len(b.Ranges)
		cell := fmt.Sprintf("2^%d x%.3f", p.Log2, p.Speedup)
		head := "median speedup over NCCL's default per bucket: "
		if p.AtDefault {
			cell = fmt.Sprintf("2^%d x%.3f", p.Log2, p.FloorSpeedup)
			head = fmt.Sprintf("NCCL's default communicator's %d channels, where the floor's count ran slower than the default; its median speedup per bucket: ", p.Channels)
		}
		if n > 0 && b.Ranges[n-1].Coll == p.Coll && b.Ranges[n-1].Channels == p.Channels && b.Ranges[n-1].MaxLog2 == p.Log2-1 &&
			strings.HasPrefix(b.Ranges[n-1].Evidence, head) {
			b.Ranges[n-1].MaxLog2 = p.Log2
			b.Ranges[n-1].Evidence += "; " + cell
			continue
		}
		b.Ranges = append(b.Ranges, BuiltinRange{Coll: p.Coll, MinLog2: p.Log2, MaxLog2: p.Log2, Channels: p.Channels,
			Evidence: head + cell})
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// WriteForcedPicks prints the picks as a Markdown table.
func WriteForcedPicks(w *strings.Builder, picks []ForcedPick, ranks int) {
	fmt.Fprintf(w, "| coll | bucket | NCCL default us | best forced | its us | speedup (median) | lowest | runs | answer |\n")
	fmt.Fprintf(w, "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- |\n")
	for _, p := range picks {
		ans := "native"
		if p.Channels > 0 {
			ans = strconv.Itoa(p.Channels)
		}
		if p.AtDefault {
			ans += " (the default communicator's)"
		}
		fmt.Fprintf(w, "| %s | 2^%d | %.2f | %d | %.2f | %.3f | %.3f | %d | %s |\n", p.Coll, p.Log2, p.Default*1e6, p.Best,
			p.BestTime*1e6, p.Speedup, p.MinSpeedup, p.Pairs, ans)
	}
}
