package learn

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"sync"
)

// Mode selects how a Tuner chooses.
type Mode uint8

const (
	// ModeLearn (DPML_TUNER=auto): the model's best arm first, then online
	// hill climbing on measured times, freezing and re-exploring on drift.
	ModeLearn Mode = iota
	// ModeModel (DPML_TUNER=model): the model's best arm, always; Record
	// never asks for a commit.
	ModeModel
)

// Stat is the robust statistic an arm's samples are summarised by.
type Stat uint8

const (
	// StatMin: the minimum of the arm's recent samples (default). Timing
	// outliers are one-sided (interference only slows a call down, and the
	// max over ranks makes them frequent), so with R = 3 the minimum is
	// wrong only when all three samples are outliers.
	StatMin Stat = iota
	// StatMedian: the median of the arm's recent samples.
	StatMedian
	// StatTrimmed: the mean of the arm's recent samples without the
	// largest quarter of them. What a program calling back to back pays
	// is the mean; the minimum ranks arms by their best case, which
	// favours an arm whose typical call is slower but whose spread is
	// wider (a deep tree, where any rank's hiccup delays its subtree).
	// Dropping the top quarter keeps the machine's rare long stalls out.
	StatTrimmed
)

// Stats names the Stat values (DPML_TUNER_STAT), in order.
var Stats = []string{"min", "median", "trimmed"}

// Cost says how one call's cost is read from the ranks' entry and exit
// times (RecordSpan: both on a clock common to the ranks).
type Cost uint8

const (
	// CostSecondExit (default): the second-to-last rank's exit after the
	// last rank's entry. Before the last arrival no plan can finish, so
	// what came before it (arrival skew) says nothing about the plan; the
	// call is over for the program when its ranks have left, since
	// whatever they do next together waits for them. The second-to-last
	// exit rather than the last: on a shared machine one rank stalled on
	// its way out is the usual outlier, and with the last exit it sets the
	// sample (the simulator, 16 ranks, 5% stalls per rank: the learner at
	// the best in 96% of runs with this rule and 5 samples per arm, 74%
	// with the last exit and 3). A plan whose ranks leave at different
	// times, a tree whose root leaves first, still pays its slowest level:
	// several ranks wait for it. The arrival skew (last entry minus first)
	// is kept apart (Info.Skew). A second max-allreduce.
	CostSecondExit Cost = iota
	// CostLastExit: the last rank's exit after the last rank's entry (one
	// max-allreduce). The device measured the learner preferring trees
	// 1.3-1.6x slower than the best copies plan while it averaged the
	// exits (CostMeanExit).
	CostLastExit
	// CostMeanExit: the ranks' mean time from the last rank's entry to
	// their own exit (kept to show what it does).
	CostMeanExit
	// CostSlowest: the largest local time (exit minus entry), skew
	// included (the tuner's rule before skew was handled; kept to show
	// what skew does to the learner).
	CostSlowest
	// CostPenult: the second-to-last rank's exit after the second-to-last
	// rank's entry (the penultimate exit after the penultimate entry).
	// Back to back, a rank enters a call when it left the one before, so
	// the n-th rank to enter is the n-th to have left: this rule is then
	// the period of the second-to-last rank, which is every rank's period
	// (the program's time per call), while CostSecondExit, timed from the
	// last entry, misses the gap between the last and the second-to-last
	// exit of the call before. That gap is the plan's own: on the device
	// (1 x 16) the second exit read 0.76 us for a tree whose back-to-back
	// period was 2.1 us, and settled trees 1.1-1.4x slower than the best
	// copies plan, while the last exit (the same identity with the last
	// rank) did not. Like the second exit it drops one stalled rank, on
	// the way in or out. Under arrival skew it adds the gap between the
	// two latest arrivals, the same for every plan. A second
	// max-allreduce of twice the width.
	CostPenult
)

// Costs names the Cost values (DPML_TUNER_COST), in order.
var Costs = []string{"second", "last", "mean", "slowest", "penult"}

// Second is the second exchange of the commit step: the reduction the
// engine applies to Exits' buffer (SecondNone: no second exchange).
type Second uint8

const (
	SecondNone Second = iota
	SecondSum         // sum-allreduce (CostMeanExit)
	SecondMax         // max-allreduce (CostSecondExit, CostPenult)
)

// Combine reduces two ranks' values of Exits' buffer as the second
// exchange does (sum or max): for simulations and tests that stand in for
// the engine's allreduce.
func (s Second) Combine(a, b int64) int64 {
	if s == SecondMax {
		return max(a, b)
	}
	return a + b
}

// excluded marks, in Exits' buffer for CostSecondExit and CostPenult, the
// rank that left last (and for CostPenult, in the entries' half, the rank
// that came last): below any real time, so the max over the others is the
// second.
const excluded = -(1 << 62)

// Config tunes the learner. Zero numeric fields take the defaults shown.
// Every rank of a communicator must use the same Config.
type Config struct {
	Mode          Mode
	Batch         int     // B, samples buffered between commits (16; 1..256)
	SamplesPerArm int     // R, samples an arm needs before it is compared (5; 1..8)
	Improve       float64 // move to a neighbour faster by more than this fraction (0.02)
	// Leave is Improve for the settled arm in a re-exploration: a key
	// that settled leaves its arm only for one faster by more than this
	// fraction (0.05: an arm within 5% of the best counts as the best).
	// Drift windows fire on a shared machine's noise, and near-equal arms
	// would otherwise trade places at every episode.
	Leave        float64
	Drift        float64 // re-explore when a frozen arm is slower or faster by more than this (0.15)
	DriftWindow  int     // W, samples per drift check (8; 1..32)
	FrozenStride int     // a frozen key samples one call in this many (4)
	// SegmentBytes is the engine's segment size for this communicator (the
	// model prices segments with it; Pipelined k = 1 is only an arm for
	// buckets larger than one segment). 0: whole message in one segment.
	SegmentBytes int
	NoNative     bool // leave the Native arm out
	// CMA adds cross-memory-attach twins of the arms of buckets from
	// 16 KiB (the engine sets it where the kernel permits the transfers).
	CMA       bool
	Pipelines []int // Pipelined k values to try on several nodes ({1, 2, 4, 8})
	Stat      Stat  // StatMin
	Cost      Cost  // CostSecondExit
	// TreeBytes: size buckets whose smallest size is at most this get the
	// reduction tree's arms (0: 16 KiB; negative: none).
	TreeBytes int
	// TreeRadixes are the tree arms' radixes ({4, 8, 16, 32, 64}; a
	// key's arms stop at the first that makes its tree flat). Radix 2 is
	// left out by default: as a fixed plan it was never the fastest at
	// any size on the devices (1x16: slowest tree from 4 B to 16 KiB;
	// 1x32: behind radix 4 and 8), yet a deep tree's noisy samples can
	// win the learner's minimum (1x16, 2-4 KiB: auto settled on it at
	// 1.7-2.2x the best plan).
	TreeRadixes []int
	// Reject bounds exploration: an arm whose first sample is more than
	// Reject times the best estimate of the episode is not sampled again
	// (2; see the package documentation for the bound it gives).
	Reject float64
	// Strikes is the number of drift windows in a row that make a settled
	// key explore again (3). Each exploration that settles back on the
	// same arm doubles it for that key (up to 64): noise that keeps
	// firing is heard less and less often.
	Strikes int
	// OffloadBytes: on several nodes, size buckets whose largest size is
	// at most this (times OffloadLeaders) get in-network offload twins (plan.OffloadSharp) of
	// the arms the offload serves: the tree's arms when OffloadLeaders is
	// 1 (node level: the tree's root offloads), the DPML copies arm with
	// l = OffloadLeaders otherwise (socket level). 0: no offload arms.
	OffloadBytes   int
	OffloadLeaders int
	// RingBytes: on three nodes or more, size buckets whose smallest size
	// is at least this get ring twins (plan.InterRing: the engine's ring
	// reduce-scatter and allgather among the leaders) of their DPML and
	// Pipelined grid arms (0: 64 KiB; negative: none). Smaller buckets get
	// none: the ring's 2(n-1) startups against recursive doubling's lg n
	// outweigh its bandwidth gain there (the default model's crossover is
	// about 80 KiB per leader on 4 nodes), so its twins would only cost
	// exploration.
	RingBytes int
	// MaxStride: a settled key samples one call in FrozenStride; each
	// window that confirms its estimate doubles that stride, up to
	// MaxStride (256), so a steady key costs the tuner one exchange per
	// thousands of calls.
	MaxStride int
	// ConfirmCalls: a key explores once more, on schedule, when it has
	// made this many calls since it first settled (8192; -1: never).
	// Its first exploration ran in its first calls, which in a process
	// that has just started are its noisiest (the Go runtime's monitor
	// backs off over the first tens of milliseconds, pages and lines are
	// touched for the first time); the device's learner settled on arms
	// 10-18% slower than the best and then, with nothing to fire a drift
	// window, never looked again.
	// The confirmation leaves the settled arm for an arm faster by
	// Improve, where drift episodes need Leave (confirmMargin). Keys
	// loaded from a table are not confirmed.
	ConfirmCalls int
	// SampleShare bounds what a settled key's sampling costs the
	// program: the engine reports the tuner's overhead per recorded call
	// (NoteOverhead: the commit steps' collectives and, for libdpml.so's
	// C callers, the trip through Go that a timed call makes), and a
	// settled key's stride never falls below what keeps that overhead
	// under this share of the key's own time (0.01; negative: no
	// floor). Without it, drift windows straying on a shared machine
	// halved the stride again and again: on the device (1 x 16, C
	// client, back to back) settled keys of 8 B-1 KiB ended at strides
	// of 8-64, timing one call in 20-40, and auto ran 6-10% behind the
	// same plan fixed; sampling one call in 4096 instead, 0-3%.
	SampleShare float64
	// SamplePeriod: once a key has settled after its scheduled
	// confirmation, its stride grows past MaxStride to about the calls
	// it makes in this long (1 s; negative: never), from the call rate
	// its committed samples show (their agreed entries), so a steady key
	// comes back to the engine about once per period whatever its size.
	// A trip into Go costs a C caller more than the trip: after a
	// stretch of more than 10 ms in C the Go runtime's monitor wakes at
	// it and ticks on the rank's core for about 20 ms, on every rank at
	// once; on the device (1 x 16, auto's batches of 1500 calls of 1 KiB
	// after 1500 of the MPI library's) 11-15% of auto's calls were slow
	// against 1-3% for the same plan fixed.
	SamplePeriod float64
	// ColdSamples: a call right after a call of the same key's other arm
	// is a sample too. By default it is not, under every Cost rule: the
	// exploring key's probe then runs one call longer (its first call
	// warms it up; round robin over the probes becomes pairs). Back to
	// back a call's entries follow the exits of the call before, and a
	// plan leaves a trail (which ranks leave last, which lines sit in
	// which caches) that the next call of the same plan starts from, and
	// that its samples must start from too. Sampled after other arms'
	// calls, the device's confirmations ranked a radix-8 tree 10-19% ahead
	// of radix 4 at 1 KiB, while radix 4 ran 7-10% faster back to back,
	// and the learner settled on radix 8 in 3 runs of 3; with warm samples
	// on radix 4 in 3 of 3 (1 x 16, C client). A call after another
	// key's stays a sample: a program that interleaves its keys runs each
	// key's calls after the others'.
	ColdSamples bool
	// ConfirmBlock: each sample of the scheduled confirmation is a block
	// of this many back-to-back calls of its arm (8; 1: single calls),
	// timed from the block's first entry to its last exit and divided
	// by its length: the back-to-back period, with whatever rule Cost
	// applies to single calls diluted over the block. Single-call
	// samples ranked tree r=8 ahead of r=4 at 1 KiB on the device in most
	// runs, warm or cold, while r=4 ran 8-12% faster back to back, per
	// call at its minimum and median too (1 x 16, C client). A call
	// after another key's call ends a block early and is a single sample
	// (a program that interleaves keys never makes a block).
	ConfirmBlock int
	// Budget bounds what learning may cost a key: the time its calls
	// spend on arms other than the incumbent, beyond the incumbent's
	// time, plus the tuner's overhead for the calls it records, stays
	// under this fraction of the key's time so far (0: 0.02). A key
	// starts on the model's pick and tries one candidate arm at a time,
	// each when its expected cost fits in what the key's calls have
	// earned: a key of 10 calls explores nothing, a key of 100,000 calls
	// explores freely. Negative: no budget; a new key explores its
	// neighbourhood from its first call (the climb described in the
	// package documentation).
	Budget float64
	// OverheadGuess is the tuner's overhead per recorded call assumed
	// until the ranks have agreed on a measured one (0: 50 us).
	OverheadGuess float64
	// Candidates bounds the arms a budgeted key tries: those the model
	// prices at most this many times its pick (0: 1.5). When the key's
	// own measurements put its pick off the model's price by more than
	// half, the model is wrong there and the bound widens to Reject
	// squared.
	Candidates float64
	// ProbeReject: a candidate whose first sample is more than this many
	// times the incumbent's estimate is dropped after that sample (0:
	// 1.25).
	ProbeReject float64
}

const (
	maxSamples = 8
	maxWindow  = 32
	maxBatch   = 256
	// maxBlock bounds ConfirmBlock: dpml/internal/fused's C state keeps
	// a block's stamps in arrays of this length (DPML_FUSED_MAX_BLOCK).
	maxBlock = 64
	// maxSlots bounds the calls a batch buffers (Batch samples, each a
	// block of up to ConfirmBlock calls): the commit step exchanges
	// pendingWidth values per call.
	maxSlots  = 1024
	maxLevels = 16 // (DPML + pipelines) x {copies, CMA}
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	c, _ := Config{}.normalize()
	return c
}

func (c Config) normalize() (Config, error) {
	def := func(v *int, d, lo, hi int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < lo || *v > hi {
			return fmt.Errorf("costmodel: %s = %d, want %d..%d", name, *v, lo, hi)
		}
		return nil
	}
	for _, e := range []error{
		def(&c.Batch, 16, 1, maxBatch, "Batch"),
		def(&c.SamplesPerArm, 5, 1, maxSamples, "SamplesPerArm"),
		def(&c.DriftWindow, 8, 1, maxWindow, "DriftWindow"),
		def(&c.FrozenStride, 4, 1, 1<<20, "FrozenStride"),
		def(&c.Strikes, 3, 1, 64, "Strikes"),
		def(&c.MaxStride, 256, 1, 1<<20, "MaxStride"),
		def(&c.ConfirmCalls, 8192, -1, 1<<30, "ConfirmCalls"),
		def(&c.ConfirmBlock, 8, 1, maxBlock, "ConfirmBlock"),
	} {
		if e != nil {
			return c, e
		}
	}
	if c.Batch*c.ConfirmBlock > maxSlots {
		return c, fmt.Errorf("costmodel: Batch %d x ConfirmBlock %d = %d buffered calls, want at most %d", c.Batch, c.ConfirmBlock, c.Batch*c.ConfirmBlock, maxSlots)
	}
	if c.Improve == 0 {
		c.Improve = 0.02
	}
	if c.Leave == 0 {
		c.Leave = 0.05
	}
	if c.Drift == 0 {
		c.Drift = 0.15
	}
	if c.Reject == 0 {
		c.Reject = 2
	}
	if c.SampleShare == 0 {
		c.SampleShare = 0.01
	}
	if c.SamplePeriod == 0 {
		c.SamplePeriod = 1
	}
	switch {
	case c.Budget == 0:
		c.Budget = 0.02
	case c.Budget < 0:
		c.Budget = -1
	case math.IsInf(c.Budget, 0) || math.IsNaN(c.Budget):
		return c, fmt.Errorf("costmodel: Budget = %g: want a finite fraction", c.Budget)
	}
	if c.OverheadGuess == 0 {
		c.OverheadGuess = 50e-6
	}
	if c.Candidates == 0 {
		c.Candidates = 1.5
	}
	if c.ProbeReject == 0 {
		c.ProbeReject = 1.25
	}
	if !(c.OverheadGuess >= 0) || !(c.Candidates >= 1) || !(c.ProbeReject > 1) {
		return c, fmt.Errorf("costmodel: OverheadGuess = %g, Candidates = %g, ProbeReject = %g: want >= 0, >= 1, > 1", c.OverheadGuess, c.Candidates, c.ProbeReject)
	}
	if !(c.Reject > 1) {
		return c, fmt.Errorf("costmodel: Reject = %g: want > 1", c.Reject)
	}
	c.MaxStride = max(c.MaxStride, c.FrozenStride)
	c.OffloadBytes = max(c.OffloadBytes, 0)
	c.OffloadLeaders = max(c.OffloadLeaders, 1)
	if int(c.Stat) >= len(Stats) {
		return c, fmt.Errorf("costmodel: Stat = %d: unknown", c.Stat)
	}
	if int(c.Cost) >= len(Costs) {
		return c, fmt.Errorf("costmodel: Cost = %d: unknown", c.Cost)
	}
	switch {
	case c.TreeBytes == 0:
		c.TreeBytes = 16 << 10
	case c.TreeBytes < 0:
		c.TreeBytes = 0
	}
	switch {
	case c.RingBytes == 0:
		c.RingBytes = 64 << 10
	case c.RingBytes < 0:
		c.RingBytes = 0
	}
	if c.TreeRadixes == nil {
		c.TreeRadixes = []int{4, 8, 16, 32, 64}
	}
	rs := []int{}
	for _, r := range c.TreeRadixes {
		if r < 2 || r > maxTreeRadix {
			return c, fmt.Errorf("costmodel: tree radix %d, want 2..%d", r, maxTreeRadix)
		}
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	sort.Ints(rs)
	c.TreeRadixes = rs
	if !(c.Leave > 0 && c.Leave < 1) {
		return c, fmt.Errorf("costmodel: Leave = %g: want 0 < Leave < 1", c.Leave)
	}
	if !(c.Improve > 0 && c.Improve < 1) || !(c.Drift > 0) {
		return c, fmt.Errorf("costmodel: Improve = %g, Drift = %g: want 0 < Improve < 1, Drift > 0", c.Improve, c.Drift)
	}
	if c.Pipelines == nil {
		c.Pipelines = []int{1, 2, 4, 8}
	}
	ks := []int{}
	for _, k := range c.Pipelines {
		if k < 1 {
			return c, fmt.Errorf("costmodel: pipeline k = %d, want >= 1", k)
		}
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	sort.Ints(ks)
	if len(ks) > maxLevels/2-1 {
		return c, fmt.Errorf("costmodel: %d pipeline values, at most %d", len(ks), maxLevels/2-1)
	}
	c.Pipelines = ks
	c.SegmentBytes = max(c.SegmentBytes, 0)
	return c, nil
}

// State is a key's learner state.
type State uint8

const (
	Exploring State = iota // sampling neighbours of the current arm
	Frozen                 // using the current arm; watching for drift
)

func (s State) String() string {
	if s == Frozen {
		return "frozen"
	}
	return "exploring"
}

type armStat struct {
	n        int // samples this episode
	ring     [maxSamples]float64
	est      float64
	rejected bool // its first samples were enough: far slower than the episode's best
}

// rejectAfter is the number of samples early rejection looks at: two
// (one where an arm needs only one).
func rejectAfter(c *Config) int { return min(2, c.SamplesPerArm) }

// measured reports whether the arm has the samples it needs to be compared.
func (a *armStat) measured(r int) bool { return a.n >= r || a.rejected }

// median returns the median of the arm's recent samples.
func (a *armStat) median() float64 {
	m := min(a.n, maxSamples)
	var tmp [maxSamples]float64
	copy(tmp[:], a.ring[:m])
	return median(tmp[:m])
}

func (a *armStat) add(v float64, st Stat) {
	a.ring[a.n%maxSamples] = v
	a.n++
	m := min(a.n, maxSamples)
	var tmp [maxSamples]float64
	copy(tmp[:], a.ring[:m])
	sortSmall(tmp[:m])
	switch {
	case st == StatMin:
		a.est = tmp[0]
	case st == StatTrimmed:
		keep := m - m/4
		sum := 0.0
		for _, v := range tmp[:keep] {
			sum += v
		}
		a.est = sum / float64(keep)
	case m%2 == 1:
		a.est = tmp[m/2]
	default:
		a.est = (tmp[m/2-1] + tmp[m/2]) / 2
	}
}

// entry is the state of one key.
type entry struct {
	key   Key
	set   *armSet
	prior []float64 // model's seconds per arm
	st    []armStat

	state State
	cur   uint8
	// The exploration schedule, fixed between commits: probe[i] needs
	// need[i] calls; seq lists the calls' arms in order (round robin over
	// the probes, see schedule), then cur. (cur, its neighbours, Native.)
	probe  [maxNeighbours + 2]uint8
	need   [maxNeighbours + 2]uint8
	seq    [(maxNeighbours + 2) * maxSamples]uint8
	nprobe int
	total  int // sum of need, the length of seq's schedule

	// confirmed: the scheduled confirmation episode (Config.ConfirmCalls)
	// has started, or the key needs none (loaded from a table).
	confirmed bool
	// confirming: the episode under way is the confirmation.
	confirming bool
	// blk: calls so far of the confirmation's block under way
	// (ConfirmBlock), buffered call by call.
	blk int

	pend    int    // calls buffered since the last commit
	fcount  uint64 // frozen calls since the freeze (stride sampling)
	est     float64
	win     [maxWindow]float64
	nwin    int
	strikes int   // consecutive drift windows
	grid0   uint8 // the model's best grid (non-native) arm: where climbs start

	moves, episodes int
	calls, samples  uint64
	settledAt       int64 // calls when last frozen (-1: never)
	firstSettled    int64 // calls when first frozen (-1: never)
	touched         bool

	stride int // frozen: record one call in stride
	// rate: calls per second of the key while settled, a running mean
	// from its committed samples' agreed entries (lastT, at call
	// lastCall); SamplePeriod's stride comes from it.
	rate     float64
	lastT    float64
	lastCall uint64
	deaf     uint8 // re-explorations that came back to the same arm (Strikes << deaf)
	settled  uint8 // the arm of the last freeze
	last     int16 // the arm of the last call chosen (-1: none)
	// switches: freezes on another arm than the previous freeze's;
	// changes: calls, after the first freeze, that ran another arm than
	// the key's previous call (probes of later explorations included).
	switches, changes uint64
	// cost and skew: running means (1/16 weight) of the committed calls'
	// cost (Config.Cost) and arrival skew (last entry minus first), for
	// reports only.
	cost, skew float64

	// The budget (Config.Budget >= 0; see budget.go): elapsed is the
	// key's time so far as the tuner prices it (its calls up to acc at
	// the incumbent's estimate), spent what learning has cost it
	// (candidates' time beyond the incumbent's, recorded calls'
	// overhead). pick is the model's arm, cand the candidate under
	// trial (-1: none), tried the arms tried since the last drift, due
	// the call at which the next candidate's trial is paid for (0: none
	// left). All agreed: the same on every rank.
	elapsed, spent float64
	acc, due       uint64
	warmups        uint64 // warm-up calls of the candidate since the last commit
	pick           uint8
	cand           int16
	probing        bool
	tried          []bool
	// verdictDue: the trial's candidate's first sample is in the commit
	// step in flight (recordSpan).
	verdictDue bool
}

// Tuner chooses a plan per Key and learns from measured times. It is a
// deterministic state machine: see the package documentation for the
// contract that keeps every rank's choices identical. A Tuner belongs to one
// communicator and is not safe for concurrent use.
type Tuner struct {
	cfg Config
	// cfgKey is cfg printed, the arm sets' key beside the set key
	// (sharedArmSet); made at the first set.
	cfgKey string
	model  Model
	prov   Provenance
	keys   map[uint64]*entry
	sets   map[uint64]*armSet
	// starts are a loaded table's entries of keys not called yet: the arm
	// each key starts at, or its verdict, applied when the key is first
	// used (entry), so that a communicator's setup does not price the
	// arms of every size the table names (LoadTable, startEntry): on the
	// 2-core development machine a 72-entry machine profile's verdicts
	// cost each setup 0.4-0.9 ms when they were applied at once.
	starts map[uint64]start

	lastK uint64
	last  *entry

	// The buffered calls ("slots"), in recording order: a sample is one
	// call, or a block of ConfirmBlock back-to-back calls in as many
	// consecutive slots (no other call comes between a block's calls).
	pk []*entry
	pa []uint8
	pc []uint64 // the key's call count at each buffered call
	// pw: at a sample's last slot its calls (1, or the block's length);
	// 0 at the other slots of a block, and at the slots of a block cut
	// short or still under way, which are no sample (Commit skips them).
	pw []uint16
	// pb: a completed block's slots are numbered 1, 2, ..., n; 0
	// elsewhere (Exits needs a block call's previous call).
	pb     []uint16
	pe, px []float64 // buffered entry and exit times
	ex     []float64 // Pending's exchange buffer: pendingWidth per slot, + 1
	sx     []int64   // Exits' exchange buffer: up to 2 per slot, + 1
	vd     []float64 // Verdicts' buffer (verdictLen)
	st3    []float64 // Stamps' buffer (stampLen)
	units  int       // samples buffered (Batch's unit)
	blocks bool      // a completed block is buffered (Exits' width)
	// prevE, prevA: the key and arm of the call recorded last (CostPenult
	// keeps a call only when the call before ran the same arm of the same
	// key: see recordSpan).
	prevE   *entry
	prevA   int
	np      int
	touched []*entry
	commits uint64
	// recorded: calls committed as samples (Recorded).
	recorded uint64
	// ovhLocal: what the tuner cost this rank since the last commit, as
	// the engine last noted it (NoteOverhead); ovh: the agreed overhead
	// per recorded call, a running mean of the ranks' largest, the same
	// on every rank (Commit).
	ovhLocal, ovh float64
	// held: the buffered samples are in the ranks' exchange (Hold): no
	// call is timed or buffered until Commit.
	held bool
}

// Hold tells the tuner that the engine has started the commit step's
// exchange of the buffered samples without waiting for it: until Commit
// (which ends the hold) no call is timed, buffered or due for a commit,
// and every key keeps running the arm it runs now, so that what the
// exchange carries stays as Pending returned it. The engine completes the
// exchange at a later call, the same on every rank, and a call that waits
// for nobody costs the program no wait for the ranks that arrive last.
func (t *Tuner) Hold() { t.held = true }

// Release ends a hold without a commit. An engine that commits inside a
// call (after the call was chosen under the hold, untimed) holds the tuner
// again until the call is recorded, then releases it: the call counts as
// one of the hold's, and the commit's decisions start at the next call.
func (t *Tuner) Release() { t.held = false }

// Held reports whether the tuner is held (Hold) until its next Commit.
func (t *Tuner) Held() bool { return t.held }

// NewTuner returns a tuner using model m for its priors.
func NewTuner(cfg Config, m Model) (*Tuner, error) {
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	m.Conc = m.Conc.Clone()
	slots := c.Batch * c.ConfirmBlock // a batch of blocks
	return &Tuner{
		cfg: c, model: m,
		keys: map[uint64]*entry{}, sets: map[uint64]*armSet{}, starts: map[uint64]start{},
		pk: make([]*entry, slots), pa: make([]uint8, slots), pc: make([]uint64, slots), pw: make([]uint16, slots), pb: make([]uint16, slots),
		pe: make([]float64, slots), px: make([]float64, slots), ex: make([]float64, pendingWidth*slots+1), sx: make([]int64, 2*slots+1),
		vd: make([]float64, verdictLen(slots)), st3: make([]float64, stampLen(slots)),
		touched: make([]*entry, 0, c.Batch),
	}, nil
}

// Config returns the normalised configuration.
func (t *Tuner) Config() Config { return t.cfg }

// Model returns the model behind the priors.
func (t *Tuner) Model() Model { return t.model }

// SetProvenance sets the provenance Save writes.
func (t *Tuner) SetProvenance(p Provenance) { t.prov = p }

func (t *Tuner) entry(k Key) *entry {
	pk := pack(k)
	if t.last != nil && t.lastK == pk {
		return t.last
	}
	e := t.keys[pk]
	if e == nil {
		e = t.newEntry(k)
		if st, ok := t.starts[pk]; ok {
			delete(t.starts, pk)
			t.startEntry(e, st)
		}
		t.keys[pk] = e
	}
	t.last, t.lastK = e, pk
	return e
}

// start is a table's entry for a key (LoadTable): the arm the key starts
// at (idx) and, for a verdict (a learned entry, not a "start"), its
// estimate and samples.
type start struct {
	idx     int
	verdict bool
	est     float64
	samples uint64
}

// startEntry puts a new entry where a table's entry st says: at its start
// arm, where the hill climb (or, under a budget, the key's pick) begins,
// or settled on its verdict, with the verdict's estimate (the model's
// price when it has none), re-exploring only on drift.
func (t *Tuner) startEntry(e *entry, st start) {
	idx := st.idx
	e.cur = uint8(idx)
	est := st.est
	if !(est > 0) || math.IsInf(est, 0) {
		est = e.prior[idx]
	}
	switch {
	case t.budgeted():
		// A starting point is the key's pick; a verdict leaves no
		// candidates until a drift.
		t.startAt(e, idx)
		if st.verdict {
			e.est = est
			e.samples = st.samples
			for i := range e.tried {
				e.tried[i] = true
			}
			t.schedule(e)
		}
	case st.verdict:
		e.freeze(est, &t.cfg)
		e.samples = st.samples
		e.settledAt, e.firstSettled = 0, 0
		e.confirmed = true // learned before: no scheduled look
	}
	// Otherwise a starting point, not a verdict: the hill-climb begins
	// at this arm (e.g. a table measured before the engine changed).
}

// setFor returns the arm set of key k's class, built on first use.
func (t *Tuner) setFor(k Key) *armSet {
	sk := setKey(k)
	set := t.sets[sk]
	if set == nil {
		if t.cfgKey == "" {
			t.cfgKey = fmt.Sprintf("%+v", t.cfg)
		}
		set = sharedArmSet(k, sk, &t.cfg, t.cfgKey)
		t.sets[sk] = set
	}
	return set
}

// armSets holds the arm sets the process's tuners built, by set key and
// configuration: an arm set is never changed once built, and every
// communicator's tuner asks for the same few (building them was a third
// of a tuner's setup).
var armSets struct {
	mu sync.Mutex
	m  map[armSetKey]*armSet
}

type armSetKey struct {
	set uint64
	cfg string // the tuner's Config, printed
}

// sharedArmSet returns the arm set of key k (set key sk) under cfg (cfgKey
// its printed form), built once per process.
func sharedArmSet(k Key, sk uint64, cfg *Config, cfgKey string) *armSet {
	a := &armSets
	a.mu.Lock()
	defer a.mu.Unlock()
	key := armSetKey{sk, cfgKey}
	if set := a.m[key]; set != nil {
		return set
	}
	set := newArmSet(k, cfg)
	if a.m == nil {
		a.m = map[armSetKey]*armSet{}
	}
	a.m[key] = set
	return set
}

// started returns k's entry, or for a key only a table's start names, a
// fresh one at that start that is not kept (reports; nil for neither).
func (t *Tuner) started(pk uint64, k Key) *entry {
	if e := t.keys[pk]; e != nil {
		return e
	}
	st, ok := t.starts[pk]
	if !ok {
		return nil
	}
	e := t.newEntry(k)
	t.startEntry(e, st)
	return e
}

func (t *Tuner) newEntry(k Key) *entry {
	set := t.setFor(k)
	e := &entry{key: k, set: set, prior: make([]float64, len(set.arms)), st: make([]armStat, len(set.arms)), settledAt: -1, firstSettled: -1, last: -1}
	n, lay := k.Bytes(), k.Layout()
	best, grid0 := 0, -1
	for i, a := range set.arms {
		e.prior[i] = t.model.Breakdown(priced(a, t.cfg.SegmentBytes), n, lay, k.Elem).Total
		if e.prior[i] < e.prior[best] {
			best = i
		}
		if i != set.native && (grid0 < 0 || e.prior[i] < e.prior[grid0]) {
			grid0 = i
		}
	}
	e.grid0 = uint8(max(grid0, 0))
	e.episodes = 1
	e.cand = -1
	if t.budgeted() {
		e.tried = make([]bool, len(set.arms))
		t.startAt(e, best)
		return e
	}
	if t.cfg.Mode == ModeModel {
		e.cur = uint8(best)
		e.freeze(e.prior[best], &t.cfg)
		return e
	}
	e.cur = e.grid0 // climb the grid; Native is measured on the side
	e.scheduleCalls(&t.cfg)
	return e
}

// Choose returns the arm for the next call of key k. It depends only on the
// committed state and on how many calls of k were recorded since the last
// Commit. O(1); no allocation once k has been seen.
func (t *Tuner) Choose(k Key) Arm { return t.choose(t.entry(k)) }

func (t *Tuner) choose(e *entry) Arm {
	i := t.next(e)
	if e.firstSettled >= 0 && e.last >= 0 && int16(i) != e.last {
		e.changes++
	}
	e.last = int16(i)
	return e.set.arms[i]
}

// Timed reports whether the next Record of key k keeps its time (every
// call while exploring, one in the key's stride once settled): the engine
// reads the clock only for those calls. Record must still be called for
// every call.
func (t *Tuner) Timed(k Key) bool {
	if t.cfg.Mode == ModeModel {
		return false
	}
	return t.timed(t.entry(k))
}

func (t *Tuner) timed(e *entry) bool {
	if t.cfg.Mode == ModeModel || t.held {
		return false
	}
	if e.state == Frozen {
		return (e.fcount+1)%uint64(e.stride) == 0 || (e.due > 0 && e.calls+1 >= e.due)
	}
	// A warm-up call (recordSpan: the key's previous call ran another
	// arm) keeps no time. A confirmation block's calls are timed each
	// (Commit prices a block call by call).
	if t.prevE != e || t.prevA == int(e.next()) {
		return true
	}
	return t.cfg.ColdSamples
}

// KeyState is one key's learner state, taken once for a run of calls of
// that key (the engine keeps the last call's): Next and Record are Choose
// with Timed, and RecordSpan, without the key's lookup on every call. It
// stays valid as long as its Tuner (a key's state is made once and never
// replaced), and behaves exactly as the calls by key do.
type KeyState struct {
	t *Tuner
	e *entry
}

// State returns key k's state, making it as Choose would.
func (t *Tuner) State(k Key) KeyState { return KeyState{t: t, e: t.entry(k)} }

// Next is Choose then Timed for the state's key.
func (s KeyState) Next() (a Arm, timed bool) {
	a = s.t.choose(s.e)
	return a, s.t.timed(s.e)
}

// Peek returns the arm the key's next call runs (Next's), without Next's
// bookkeeping.
func (s KeyState) Peek() Arm { return s.e.set.arms[s.t.next(s.e)] }

// Record is RecordSpan for the state's key.
func (s KeyState) Record(a Arm, entry, exit float64) (commit bool) {
	return s.t.recordSpan(s.e, a, entry, exit)
}

// maxUntimed is Untimed's answer for a key that never needs a call seen
// (DPML_TUNER=model): unbounded, in practice.
const maxUntimed = 1 << 30

// Untimed returns how many of the key's next calls the learner needs
// neither timed nor recorded one by one: a settled key's calls before its
// next stride sample (all of them under ModeModel), 0 while it explores.
// Their arm is the settled one (Next's). A caller that runs them without
// Next and Record (the engine's fused calls run by libdpml.so's C layer)
// credits them with Skip before the key's next Next.
func (s KeyState) Untimed() int {
	e := s.e
	if s.t.cfg.Mode == ModeModel {
		return maxUntimed
	}
	if e.state != Frozen {
		return 0
	}
	st := uint64(e.stride)
	n := st - e.fcount%st - 1
	if e.due > 0 {
		// The call that pays for the next candidate comes back.
		n = min(n, e.due-min(e.due, e.calls+1))
	}
	return int(n)
}

// Skip credits n calls of the key's settled arm made without Next and
// Record, n at most Untimed(): the state is then what n pairs of Next and
// Record would have left.
func (s KeyState) Skip(n int) {
	if n <= 0 {
		return
	}
	e, t := s.e, s.t
	e.calls += uint64(n)
	if t.cfg.Mode == ModeModel {
		return
	}
	e.fcount += uint64(n)
	t.prevE, t.prevA = e, int(e.cur)
}

// Samples plans a settled key's next stride samples for a caller that
// runs the key's calls without Next and Record and stamps the sampled
// ones itself (libdpml.so's C layer): after the key's next gap calls
// (Untimed's), every stride-th call is a sample, up to n of them, the
// last being the one that makes the commit step due (the batch full) or
// the most-th. n is 0 unless the key is settled with no candidate waiting
// (its due call), no commit step holds the tuner, and the cost rule
// prices a call by its own entry and exit (every rule but CostPenult,
// whose entries are the previous call's exits). The caller reports the
// calls with RecordSampled, which leaves the state what Next and Record
// of each call would have left.
func (s KeyState) Samples(most int) (gap, stride, n int) {
	e, t := s.e, s.t
	c := &t.cfg
	if c.Mode == ModeModel || t.held || e.state != Frozen || e.due > 0 || c.Cost == CostPenult || most <= 0 {
		return 0, 0, 0
	}
	units, room := t.units, len(t.pe)-t.np
	if units >= c.Batch || room < 1 {
		return 0, 0, 0
	}
	// The n-th sample makes the commit due (sampled: the batch full, or
	// less room left than a block needs), or is the most-th.
	n = max(1, min(most, c.Batch-units, room-c.ConfirmBlock+1))
	return s.Untimed(), e.stride, n
}

// RecordSampled credits ran calls of the key made as Samples planned
// (gap, stride): the calls gap, gap+stride, ... among them are samples,
// entered and left at entry[j] and exit[j] on this rank (as Record's); the
// others are credited as Skip's. It reports whether the commit step is
// due.
func (s KeyState) RecordSampled(gap, stride, ran int, entry, exit []float64) (commit bool) {
	done := 0
	for j := range min(len(entry), len(exit)) {
		at := gap + j*stride
		if at >= ran {
			break
		}
		s.Skip(at - done)
		a := s.t.choose(s.e)
		if s.t.recordSpan(s.e, a, entry[j], exit[j]) {
			commit = true
		}
		done = at + 1
	}
	s.Skip(ran - done)
	return commit
}

// Block returns the arm a and the length n of the confirmation block
// (Config.ConfirmBlock) the key's next calls make, when a caller may run
// them without Next and Record on every call and report them at once
// with RecordBlock: libdpml.so's C layer runs such a block of a plan it
// runs itself, stamping each call's entry and exit, so the sample holds
// no trip into Go at all. n is 0 unless the key is in its confirmation,
// its next call is warm (the key's last call ran a: not a warm-up) and
// the batch has room for the block's calls; n counts the
// block's calls still to come (fewer than ConfirmBlock when the block
// began call by call).
func (s KeyState) Block() (a Arm, n int) {
	e, t := s.e, s.t
	c := &t.cfg
	if c.Mode == ModeModel || t.held || e.state != Exploring || !e.confirming || c.ConfirmBlock <= 1 ||
		e.pend >= e.total || t.units == c.Batch || len(t.pe)-t.np < c.ConfirmBlock-e.blk {
		return Arm{}, 0
	}
	i := e.next()
	if t.prevE != e || t.prevA != int(i) {
		return Arm{}, 0
	}
	return e.set.arms[i], c.ConfirmBlock - e.blk
}

// Warm records a call of arm a that is no sample: it only warms the arm
// up, as a call right after another arm's does, and a block of the
// confirmation starts after it. A caller that runs the blocks itself
// (Block) warms with the call before each block: libdpml.so's engine runs
// that call in Go, and a block whose first call paid the trip into Go and
// back out would not be timed as the C layer runs the arm. The episode
// then takes one call more per block. A settled key's stride sample, if
// this call was due to be one, moves to the key's next call.
func (s KeyState) Warm(a Arm) {
	e, t := s.e, s.t
	e.calls++
	if t.cfg.Mode == ModeModel {
		return
	}
	idx := e.set.index(a)
	t.prevE, t.prevA = e, idx
	if idx < 0 {
		return
	}
	e.blk = 0
	if e.state == Frozen && (e.fcount+1)%uint64(e.stride) != 0 {
		e.fcount++
	}
}

// RecordBlock records len(entry) back-to-back calls of arm a (at most
// Block's n) run without Next and Record: call j entered at entry[j] and
// left at exit[j] (seconds, on the clock RecordSpan takes; exit has
// entry's length). The key's state is then exactly what as many pairs of
// Next and Record would have left with those times: fewer calls than
// Block's n leave the block to go on with the key's next calls. It
// reports whether the commit step is due, as Record does.
func (s KeyState) RecordBlock(a Arm, entry, exit []float64) (commit bool) {
	for j := range min(len(entry), len(exit)) {
		s.t.choose(s.e)
		if s.t.recordSpan(s.e, a, entry[j], exit[j]) {
			commit = true
		}
	}
	return commit
}

// next is the arm index of e's next call: its schedule's (entry.next),
// but the incumbent while a trial's candidate waits, under the hold, for
// its first sample's verdict (recordSpan).
func (t *Tuner) next(e *entry) uint8 {
	if e.verdictDue && t.held {
		return e.cur
	}
	return e.next()
}

func (e *entry) next() uint8 {
	if e.state == Frozen || e.pend >= e.total {
		return e.cur
	}
	return e.seq[e.pend]
}

// Record is RecordSpan with every rank entering at time 0: the call's
// local duration on this rank. With all ranks recording this way the cost
// is the largest duration (ranks that entered together); for a single
// process, and for tests of the learner alone.
func (t *Tuner) Record(k Key, a Arm, localSeconds float64) (commit bool) {
	return t.RecordSpan(k, a, 0, localSeconds)
}

// RecordSpan notes that a call of key k ran arm a, entered at entry and
// left at exit on this rank (seconds on a clock common to the ranks: the
// engine reads CLOCK_MONOTONIC, shared by the processes of one host, and
// corrects it by each node's estimated offset when hosts differ). It
// buffers the times when the learner wants them (every call while
// exploring, one in the key's stride when frozen: see Timed) and reports
// whether the engine must now run the commit step (Pending, max-allreduce,
// Commit) before the next call: when the batch is full, or when an
// exploring key has been given all the calls its schedule asked for. Arms
// that are not in k's arm set, and calls recorded while the batch is full,
// are ignored. O(1); no allocation.
func (t *Tuner) RecordSpan(k Key, a Arm, entry, exit float64) (commit bool) {
	return t.recordSpan(t.entry(k), a, entry, exit)
}

func (t *Tuner) recordSpan(e *entry, a Arm, entry, exit float64) (commit bool) {
	e.calls++
	if t.cfg.Mode == ModeModel {
		return false
	}
	idx := e.set.index(a)
	// Under CostPenult a call's entries are the exits of the call before
	// on the communicator: when that one ran another arm (or key), its
	// exit spread, not this arm's, sets the penultimate entry, and a tree's
	// lagging last rank would be charged to nobody. Such a call is not a
	// sample: an exploring key's probe then runs one call longer (its
	// first is a warm-up), and a frozen key's stride sample waits for a
	// call after one of its own.
	//
	// Under every rule a call right after one of the same key's other
	// arms is no sample either (unless ColdSamples): it starts from the
	// trail that arm left, which the arm being measured never meets when
	// it runs. A call after another key's is a sample: that is how this
	// key's calls run when the program interleaves its keys.
	same := t.prevE == e && t.prevA == idx
	switched := t.prevE == e && t.prevA != idx
	t.prevE, t.prevA = e, idx
	if idx < 0 {
		return false
	}
	if t.held {
		// No sample: a frozen key's stride sample moves to a call
		// after the hold, an exploring key's probe runs on.
		e.blk = 0
		if e.state == Frozen && (e.fcount+1)%uint64(e.stride) != 0 {
			e.fcount++
		}
		return false
	}
	due := e.state == Frozen && e.due > 0 && e.calls >= e.due
	if e.state == Frozen {
		e.fcount++
		if e.fcount%uint64(e.stride) != 0 && !due {
			return false
		}
	}
	if (t.cfg.Cost == CostPenult && !same) || (switched && !t.cfg.ColdSamples) {
		e.blk = 0
		if e.state == Frozen {
			e.fcount-- // sample the next call instead
		} else if e.probing && idx != int(e.cur) {
			e.warmups++
		}
		return false
	}
	if t.units == t.cfg.Batch {
		return true
	}
	w := 1
	if e.confirming && e.state == Exploring && t.cfg.ConfirmBlock > 1 {
		// A block of back-to-back calls (Config.ConfirmBlock), each
		// call buffered with its own times; a call after another key's
		// is a sample alone.
		if !same {
			e.blk = 0
		} else {
			if e.blk == 0 && len(t.pe)-t.np < t.cfg.ConfirmBlock {
				return true // no room for the block: commit first
			}
			t.buffer(e, idx, entry, exit, 0)
			if e.blk++; e.blk < t.cfg.ConfirmBlock {
				return false
			}
			w, e.blk = e.blk, 0
			for j := range w {
				t.pb[t.np-w+j] = uint16(j + 1)
			}
			t.pw[t.np-1] = uint16(w)
			t.blocks = true
			return t.sampled(e)
		}
	}
	if t.np == len(t.pe) {
		return true
	}
	t.buffer(e, idx, entry, exit, uint16(w))
	if e.probing && e.state == Exploring && int16(idx) == e.cand && e.st[idx].n == 0 {
		// A trial's candidate's first sample ends the batch, so that
		// its verdict (ProbeReject) comes before the candidate's other
		// calls run; until it comes the key runs the incumbent (choose).
		t.sampled(e)
		e.verdictDue = true
		return true
	}
	return t.sampled(e)
}

// buffer appends one call's times to the batch (pw: see Tuner.pw).
func (t *Tuner) buffer(e *entry, idx int, entry, exit float64, w uint16) {
	i := t.np
	t.pk[i], t.pa[i], t.pe[i], t.px[i], t.pc[i], t.pw[i], t.pb[i] = e, uint8(idx), entry, exit, e.calls, w, 0
	t.np++
}

// sampled counts a sample of e just buffered whole and reports whether
// the commit step is due: the batch is full, or the exploring key has all
// the calls its schedule asked for.
func (t *Tuner) sampled(e *entry) bool {
	t.units++
	e.pend++
	return t.units == t.cfg.Batch || len(t.pe)-t.np < t.cfg.ConfirmBlock || (e.state == Exploring && e.pend >= e.total) ||
		(e.state == Frozen && e.due > 0 && e.calls >= e.due)
}

// Pending returns the first exchange buffer of the buffered samples: for
// n samples in recording order, four blocks of n: the entry times, the
// negated entry times, the local durations (exit - entry) and the exit
// times, then one value, the overhead NoteOverhead noted last per pending
// sample, as a slice of the tuner's own buffer (empty when nothing is
// pending). The engine
// max-allreduces it in place (one collective gives every sample's last
// entry, first entry, longest duration and last exit, and the largest
// overhead) and passes the result to Commit, and to Exits first unless
// Second is SecondNone. Its length is the same on every rank.
func (t *Tuner) Pending() []float64 {
	n := t.np
	if n == 0 {
		return t.ex[:0]
	}
	for i := 0; i < n; i++ {
		t.ex[i], t.ex[n+i], t.ex[2*n+i], t.ex[3*n+i] = t.pe[i], -t.pe[i], t.px[i]-t.pe[i], t.px[i]
	}
	t.ex[pendingWidth*n] = t.ovhLocal / float64(n)
	return t.ex[:pendingLen(n)]
}

// pendingWidth is the number of values per sample in Pending's buffer,
// which ends with one more (pendingLen).
const pendingWidth = 4

// pendingLen is the length of Pending's buffer for n samples.
func pendingLen(n int) int { return pendingWidth*n + 1 }

// ExchangeValues bounds the length of Pending's, Exits', Stamps' and
// Verdicts' buffers, for a caller that exchanges them through memory of
// its own.
const ExchangeValues = pendingWidth*maxSlots + 1

// NoteOverhead tells the tuner what it has cost this rank since the last
// commit step, in seconds: that commit's collectives and any extra work
// the calls timed since made. The next Pending carries it per pending
// sample; the ranks' largest, averaged over commits, sets how sparsely a
// settled key must sample (Config.SampleShare). Values that are not
// finite and positive count as none.
func (t *Tuner) NoteOverhead(seconds float64) {
	if !(seconds > 0) || math.IsInf(seconds, 0) {
		seconds = 0
	}
	t.ovhLocal = seconds
}

// Commits returns how many commit steps the tuner has taken: a key's
// state changes between two calls of its own only at a commit.
func (t *Tuner) Commits() uint64 { return t.commits }

// Recorded returns how many calls the tuner's commit steps have taken
// as samples (each call of a block counted).
func (t *Tuner) Recorded() uint64 { return t.recorded }

// Overhead returns the agreed overhead per recorded call (seconds): the
// running mean of the ranks' largest NoteOverhead values over commits.
func (t *Tuner) Overhead() float64 { return t.ovh }

// Second reports the second exchange Commit needs of Exits' buffer: a sum
// for the mean exit, a max for the second exit, none otherwise (the engine
// then passes nil).
func (t *Tuner) Second() Second {
	switch t.cfg.Cost {
	case CostMeanExit:
		return SecondSum
	case CostSecondExit, CostPenult:
		return SecondMax
	}
	return SecondNone
}

// exitsWidth is the length of Exits' buffer for n buffered calls: the
// exits, for CostPenult the entries too, for CostSecondExit with a block
// buffered the block calls' previous exits too, then the rank count.
func (t *Tuner) exitsWidth(n int) int {
	if t.cfg.Cost == CostPenult || (t.cfg.Cost == CostSecondExit && t.blocks) {
		return 2*n + 1
	}
	return n + 1
}

// Exits returns the second exchange buffer, given Pending's buffer after
// its max-allreduce: each buffered call's exit on this rank after the
// call's last entry, in whole nanoseconds (then, as exitsWidth says, one
// more value per call), then a 1 (the rank count, once summed), as a
// slice of the tuner's own buffer. The engine sum-allreduces
// it in place and passes both buffers to Commit. Integers because an
// integer sum is exact in any order: a floating-point sum may round
// differently on different ranks (an allreduce's ranks can add in
// different orders), and then the ranks' decisions would part.
func (t *Tuner) Exits(maxed []float64) []int64 {
	n := t.np
	w := t.exitsWidth(n)
	out := t.sx[:w]
	if n == 0 || len(maxed) != pendingLen(n) {
		return out[:0] // Commit reports the length error
	}
	ns := func(d float64) int64 {
		// Bounded so that any number of ranks sums without overflow:
		// 2^40 ns is 18 minutes.
		return int64(math.Round(max(min(d*1e9, 1<<40), -(1 << 40))))
	}
	for i := 0; i < n; i++ {
		out[i] = ns(t.px[i] - maxed[i])
		if (t.cfg.Cost == CostSecondExit || t.cfg.Cost == CostPenult) && t.px[i] >= maxed[3*n+i] {
			out[i] = excluded // this rank left last
		}
		switch {
		case t.cfg.Cost == CostPenult:
			out[n+i] = ns(t.pe[i] - maxed[i]) // <= 0: before the last entry
			if t.pe[i] >= maxed[i] {
				out[n+i] = excluded // this rank came last
			}
		case w > n+1:
			// CostSecondExit with blocks: a block's later call gives
			// this rank's time since its exit from the call before,
			// negated, so that the max is the ranks' shortest
			// (Commit's lag).
			out[n+i] = excluded
			if t.pb[i] > 1 {
				out[n+i] = ns(t.px[i-1] - t.pe[i])
			}
		}
	}
	out[w-1] = 1
	return out
}

// Commit applies the buffered samples, given Pending's buffer after its
// max-allreduce and, unless Second is SecondNone, Exits' buffer after its
// second allreduce (nil otherwise): each sample's cost (Config.Cost: by
// default the second-to-last exit after the last entry, see
// CostSecondExit) and skew (last entry minus
// first), in order, then advances every key that got samples. Only Commit
// changes decisions. maxed and summed may be the slices Pending and Exits
// returned.
func (t *Tuner) Commit(maxed []float64, summed []int64) error {
	t.held = false
	n := t.np
	sum := t.Second() != SecondNone
	if n == 0 || len(maxed) != pendingLen(n) || (sum && len(summed) != t.exitsWidth(n)) {
		return fmt.Errorf("costmodel: commit of %d and %d values for %d pending samples (want %d and %d)", len(maxed), len(summed), n, pendingLen(n), t.exitsWidth(n))
	}
	t.noteAgreedOverhead(maxed[pendingWidth*n])
	var ranks int64 = 1
	if t.Second() == SecondSum {
		if ranks = summed[n]; ranks < 1 {
			return fmt.Errorf("costmodel: commit with a rank count of %d", ranks)
		}
	}
	v := t.vd[:verdictLen(n)]
	for j := 0; j < n; j++ {
		v[j], v[n+j], v[2*n+j] = maxed[j], t.callCost(j, maxed, summed, ranks), maxed[j]+maxed[n+j]
		v[3*n+j] = t.lag(j, maxed, summed)
	}
	t.apply(v)
	return nil
}

// apply commits the buffered samples given their verdicts (Verdicts'
// layout, the overhead aside): each sample's cost and skew, in order,
// then advances every key that got samples.
func (t *Tuner) apply(v []float64) {
	n := t.np
	for i := 0; i < n; i++ {
		e, w := t.pk[i], int(t.pw[i])
		if w == 0 {
			// A call of a block that a later slot completes, or of
			// one cut short or still under way: that block starts
			// again after this commit.
			if t.pb[i] == 0 {
				e.blk = 0
			}
			continue
		}
		if !e.touched {
			e.touched = true
			t.touched = append(t.touched, e)
		}
		var cost, skew float64
		for j := i - w + 1; j <= i; j++ {
			cost += v[n+j]
			skew += v[2*n+j]
			if j > i-w+1 {
				cost += v[3*n+j]
			}
		}
		cost /= float64(w) // a block's period per call
		if t.budgeted() {
			t.charge(e, t.pa[i], cost, w)
		}
		e.note(cost, skew/float64(w))
		e.pace(t.pa[i], v[i], t.pc[i])
		e.observe(t.pa[i], cost, &t.cfg)
	}
	clear(t.pk[:n])
	for i, e := range t.touched {
		e.touched = false
		e.pend = 0
		e.verdictDue = false
		if t.budgeted() {
			t.settle(e) // the budget's side of the commit; advance below
		}
		e.advance(&t.cfg)
		if t.budgeted() {
			t.afterAdvance(e)
		}
		if e.state == Frozen {
			e.stride = max(e.stride, e.strideFloor(&t.cfg, t.overhead()))
		}
		t.touched[i] = nil
	}
	t.touched = t.touched[:0]
	t.recorded += uint64(n)
	t.np, t.units, t.blocks = 0, 0, false
	t.commits++
}

// noteAgreedOverhead folds the ranks' largest overhead per recorded call
// of a commit step, v, into the running mean (Overhead). v is the same
// on every rank, folded in the same order: the ranks' floors agree.
func (t *Tuner) noteAgreedOverhead(v float64) {
	if v > 0 && !math.IsInf(v, 0) {
		if t.ovh == 0 {
			t.ovh = v
		} else {
			t.ovh += (v - t.ovh) / 4
		}
	}
}

// callCost is buffered call i's cost under Config.Cost, given Commit's
// exchanged buffers.
func (t *Tuner) callCost(i int, maxed []float64, summed []int64, ranks int64) float64 {
	n := t.np
	lastEntry := maxed[i]
	switch t.cfg.Cost {
	case CostLastExit:
		return maxed[3*n+i] - lastEntry
	case CostMeanExit:
		return float64(summed[i]) / float64(ranks) * 1e-9
	case CostSlowest:
		return maxed[2*n+i]
	case CostSecondExit:
		if summed[i] > excluded {
			return float64(summed[i]) * 1e-9
		}
		return maxed[3*n+i] - lastEntry // one rank, or a tie at the last exit
	case CostPenult:
		// Both in ns after the last entry; a tie at the last exit (or
		// one rank) falls back to it, a tie at the last entry times
		// from it.
		exit, entry := maxed[3*n+i]-lastEntry, 0.0
		if summed[i] > excluded {
			exit = float64(summed[i]) * 1e-9
		}
		if summed[n+i] > excluded {
			entry = float64(summed[n+i]) * 1e-9
		}
		return exit - entry
	}
	return 0
}

// lag is what block call i owes to the call before it under
// CostSecondExit (0 under the other rules): the time from that call's
// second-to-last exit to this call's last entry, less the shortest time
// a rank spent between the two calls (the program's: the caller's loop,
// a barrier, its computation, counting for no plan), and at most that
// call's last exit. Back to back, the rank a plan lets out last is the
// last in again, and its lateness is the plan's; behind a barrier every
// rank waits for it, and the barrier's own time is what every rank
// spends outside; between calls of a computing program the ranks'
// computation is spread more widely than any plan's exits, and the lag
// is the plan's whole tail (the last exit rule's cost). A block's calls
// then cost what the program pays for them: the period back to back,
// not the program's time between them.
func (t *Tuner) lag(i int, maxed []float64, summed []int64) float64 {
	n := t.np
	if t.cfg.Cost != CostSecondExit || len(summed) != 2*n+1 || summed[n+i] <= excluded {
		return 0
	}
	prev := i - 1
	second := maxed[prev] + t.callCost(prev, maxed, summed, 1)
	gap := -float64(summed[n+i]) * 1e-9 // the shortest time a rank spent between the calls
	return max(0, min(maxed[i]-gap, maxed[3*n+prev])-second)
}

// pace keeps the settled key's call rate from its committed samples:
// the calls between two samples of its arm over the time between their
// last entries (agreed: the same on every rank).
func (e *entry) pace(a uint8, at float64, call uint64) {
	if e.state != Frozen || a != e.cur || math.IsNaN(at) || math.IsInf(at, 0) {
		return
	}
	if e.lastCall > 0 && call > e.lastCall && at > e.lastT {
		r := float64(call-e.lastCall) / (at - e.lastT)
		if e.rate == 0 {
			e.rate = r
		} else {
			e.rate += (r - e.rate) / 4
		}
	}
	e.lastT, e.lastCall = at, call
}

// note keeps the running means of a committed sample's cost and skew.
func (e *entry) note(cost, skew float64) {
	if !(cost >= 0) || math.IsInf(cost, 0) || !(skew >= 0) || math.IsInf(skew, 0) {
		return
	}
	if e.cost == 0 && e.skew == 0 {
		e.cost, e.skew = cost, skew
		return
	}
	e.cost += (cost - e.cost) / 16
	e.skew += (skew - e.skew) / 16
}

func (e *entry) observe(a uint8, v float64, c *Config) {
	if !(v >= 0) || math.IsInf(v, 0) {
		return // NaN, negative, infinite: the same on every rank, so skipping is safe
	}
	e.samples++
	switch {
	case e.state == Exploring:
		s := &e.st[a]
		s.add(v, c.Stat)
		if e.probing {
			if s.n == 1 && int16(a) == e.cand && e.st[e.cur].n > 0 && v > c.ProbeReject*e.st[e.cur].est {
				s.rejected = true // a trial's candidate far behind: no more calls
			}
			return
		}
		if k := rejectAfter(c); s.n == k && a != e.cur {
			// Early rejection: the arm's first samples all far above
			// the best so far are verdict enough (the arm would lose
			// the comparison). Two, not one: a call's cost is its last
			// rank's exit, so one rank's stall anywhere makes one
			// sample look several times slower.
			best := math.Inf(1)
			for i := range e.st {
				if i != int(a) && e.st[i].n > 0 && !e.st[i].rejected {
					best = min(best, e.st[i].est)
				}
			}
			lo := s.ring[0]
			for _, x := range s.ring[1:k] {
				lo = min(lo, x)
			}
			if lo > c.Reject*best {
				s.rejected = true
			}
		}
	case a == e.cur && e.nwin < c.DriftWindow:
		e.win[e.nwin] = v
		e.nwin++
	}
}

// advance runs the state machine after a commit.
func (e *entry) advance(c *Config) {
	if e.state == Frozen {
		if !e.confirmed && c.ConfirmCalls >= 0 && e.firstSettled >= 0 && int64(e.calls)-e.firstSettled >= int64(c.ConfirmCalls) {
			// The scheduled look (Config.ConfirmCalls): e.calls is
			// the same on every rank at a commit.
			e.confirmed, e.confirming = true, true
			e.reexplore(c)
			return
		}
		if e.nwin < c.DriftWindow {
			return
		}
		var tmp [maxWindow]float64
		copy(tmp[:], e.win[:e.nwin])
		med := median(tmp[:e.nwin])
		e.nwin = 0
		if !(e.est > 0) {
			// The first window after exploring is the reference: the
			// exploration samples hold each arm's first calls, which can
			// carry one-time costs (page faults, connections opened on
			// first use) and make a median of three far too high.
			e.est = med
			return
		}
		// Drift either way: slower means this arm degraded; faster than
		// its typical time means the machine changed (a new engine path,
		// other load gone), so the other arms' estimates are stale too.
		// Strikes windows in a row: one window is noise.
		if med > e.est*(1+c.Drift) || med < e.est*(1-c.Drift) {
			// Listen more closely while a drift is being confirmed:
			// half the stride, not back to FrozenStride. Every sample
			// costs the program a share of a commit step (two
			// collectives), and on a shared machine single windows
			// stray often; a real drift is confirmed a few thousand
			// calls later instead of a few hundred.
			e.stride = max(e.stride/2, c.FrozenStride)
			if e.strikes++; e.strikes >= c.Strikes<<e.deaf {
				if c.budgeted() {
					e.restartTrials()
				} else {
					e.reexplore(c)
				}
			}
			return
		}
		e.strikes = 0
		// The reference follows the typical window (a quarter of the
		// way to each in-range median). The lowest median ever seen
		// would sink into the noise's lower tail as windows
		// accumulate, and then ordinary windows read as a slowdown:
		// on the device a settled 8-byte key stayed at stride 4 (a
		// commit every 64 calls, about a tenth of its time) and
		// re-explored 4-6 times in 18,000 calls.
		e.est += (med - e.est) / 4
		e.stride = min(2*e.stride, c.MaxStride)
		if s := e.periodStride(c); e.confirmed && !e.confirming && s > e.stride {
			// Settled after its confirmation: about one call per
			// SamplePeriod, at once (a doubling ramp from MaxStride
			// would take tens of seconds of calls).
			e.stride = s
		}
		return
	}
	if e.probing {
		e.trialAdvance(c)
		return
	}
	// Exploring: hill climbing on the grid from cur, first improvement:
	// move to the best measured neighbour that beats cur by Improve; when
	// cur's neighbours (and Native) are all measured and none does,
	// settle on cur, or on Native if that beats cur by Improve.
	r := e.samplesPerArm(c)
	nat := e.set.native
	for {
		cur := int(e.cur)
		if !e.st[cur].measured(r) {
			e.scheduleCalls(c)
			return
		}
		margin, stay := c.Improve, 0.0
		if e.firstSettled >= 0 && cur == int(e.settled) {
			// Evidence to leave the arm the key settled on: Leave,
			// and Leave more for each switch the key has made
			// (leaveMargin); Improve in a confirmation of a key that
			// has never switched (confirmMargin).
			margin = max(margin, e.confirmMargin(c))
			stay = margin
		}
		bar := e.st[cur].est * (1 - margin)
		best, done := -1, true
		for _, nb := range e.set.nbr[cur] {
			s := &e.st[nb]
			if !s.measured(r) {
				done = false
				continue
			}
			if !s.rejected && s.est < bar && (best < 0 || s.est < e.st[best].est) {
				best = int(nb)
			}
		}
		if nat >= 0 && nat != cur && !e.st[nat].measured(r) {
			done = false
		}
		if best >= 0 && e.moves < len(e.st) {
			e.cur = uint8(best)
			e.moves++
			continue
		}
		if best >= 0 {
			// Out of moves (a noisy surface): the best measured arm.
			for i := range e.st {
				if e.st[i].n >= r && !e.st[i].rejected && e.st[i].est < e.st[e.cur].est*(1-stay) {
					e.cur = uint8(i)
				}
			}
		} else if !done {
			e.scheduleCalls(c)
			return
		} else if nat >= 0 && nat != cur && !e.st[nat].rejected && e.st[nat].est < bar {
			e.cur = uint8(nat)
		}
		e.freeze(0, c) // the reference comes from the first drift window
		return
	}
}

// strideFloor is the smallest stride (FrozenStride doubled, at most
// floorCap) at which a settled key's sampling, ovh seconds per recorded
// call, costs at most SampleShare of the key's time: its drift reference,
// or before the first window its arm's estimate from the exploration.
func (e *entry) strideFloor(c *Config, ovh float64) int {
	est := e.est
	if !(est > 0) {
		est = e.st[e.cur].est
	}
	if !(est > 0) && c.budgeted() {
		est = e.prior[e.cur]
	}
	s := c.FrozenStride
	if !(ovh > 0) || !(est > 0) || !(c.SampleShare > 0) {
		return s
	}
	return doubledTo(s, ovh/(c.SampleShare*est), e.floorCap(c))
}

// floorCap bounds strideFloor. MaxStride bounds only the doubling of
// confirmed windows: a key whose calls are short next to the tuner's
// overhead needs a longer stride to keep SampleShare. Capped at
// MaxStride, the floor let 4-16 byte keys (1.3 us calls, 5-7 us of
// overhead per recorded call) sample one call in 256, at 2-3% of their
// time, and auto ran 6-13% behind the same tree fixed in runs too short
// for the confirmation (nvidia-h100-x1, 1x16, C client, 3,000 calls per
// key). Before the scheduled confirmation the floor stays within an
// eighth of ConfirmCalls (at least FrozenStride), so that the
// confirmation, which a commit starts, comes at most about Batch eighths
// of ConfirmCalls late (a commit waits for a full batch); after it, or
// without one, up to maxPeriodStride.
func (e *entry) floorCap(c *Config) int {
	if !e.confirmed && c.ConfirmCalls >= 0 {
		return max(c.FrozenStride, c.ConfirmCalls/8)
	}
	return maxPeriodStride
}

// doubledTo is the smallest of s, 2s, 4s, ... that is at least need,
// at most hi.
func doubledTo(s int, need float64, hi int) int {
	for float64(s) < need && s < hi {
		s *= 2
	}
	return min(s, hi)
}

// periodStride is the stride at which the key records about one call
// per SamplePeriod at its measured rate (a power of two times
// FrozenStride, at most maxPeriodStride), or 0 without a rate.
func (e *entry) periodStride(c *Config) int {
	if !(c.SamplePeriod > 0) || !(e.rate > 0) || math.IsInf(e.rate, 0) {
		return 0
	}
	return doubledTo(c.FrozenStride, e.rate*c.SamplePeriod, maxPeriodStride)
}

// maxPeriodStride bounds periodStride (about 8 s of 1 us calls).
const maxPeriodStride = 1 << 23

// maxLeaveSteps bounds leaveMargin's growth: at most (1 + maxLeaveSteps)
// times Leave (20% by default).
const maxLeaveSteps = 3

// leaveMargin is how much faster an arm must be for a settled key to
// leave its arm: Leave times one plus the switches the key has made (up
// to maxLeaveSteps). Each switch is evidence that the key's best arms are
// close enough for the machine's noise to reorder them: near-equal tree
// radixes traded places 1-3 times per key in 100,000 calls on the device
// with a fixed Leave of 5%, where at most one is wanted. An arm truly
// faster by more than the grown margin is still taken
// (TestLearnerLeavesHarderAfterSwitching).
func (e *entry) leaveMargin(c *Config) float64 {
	return c.Leave * float64(1+min(e.switches, maxLeaveSteps))
}

// confirmMargin is how much faster an arm must be for the key to leave
// the arm it settled on in the episode under way: leaveMargin, except in
// the scheduled confirmation of a key that has never switched, where it
// is Improve. Leave guards against drift windows that fire on noise: an
// episode they start is no evidence that another arm is faster, and
// without the margin near-equal arms traded places at every episode. The
// confirmation is not started by noise, comes once per key, and samples
// every arm in its full ring of blocks, its firmest evidence; holding it
// to Leave kept arms up to 5% slower than the best the confirmation
// measured, and the client's times agreed with the confirmation's order:
// on the device (1x32, C client, b2b, 16 KiB) three runs' confirmations
// measured l=32 4.7% and 3.5% ahead of the settled l=16 and l=8, and l=8
// 2.9% ahead of l=16; the keys stayed, and the client timed auto 4-5%
// behind l=32, the best fixed plan in all three. A key that has switched
// before its confirmation has shown its best arms to be within the
// machine's noise of each other: it keeps the grown margin.
func (e *entry) confirmMargin(c *Config) float64 {
	if e.confirming && e.switches == 0 {
		return c.Improve
	}
	return e.leaveMargin(c)
}

// freeze makes cur the key's choice; est is the reference the drift
// windows (medians) are compared with: 0 sets it from the first window.
func (e *entry) freeze(est float64, c *Config) {
	e.state = Frozen
	e.est = est
	e.nwin, e.strikes = 0, 0
	e.fcount = 0
	e.stride = c.FrozenStride
	if e.confirming {
		// Settled after the scheduled confirmation: one call per
		// SamplePeriod at once, at the rate of the key's settled calls
		// before it (periodStride), not after two drift windows at the
		// overhead's floor. Those windows took 16 samples of up to 1024
		// calls, and on the device a settled 4-16 B key's calls in that
		// stretch, each stride sample a trip into Go, ran 1-7% behind
		// the same tree fixed, with a heavier tail, their median equal.
		e.stride = max(e.stride, e.periodStride(c))
	}
	e.lastCall = 0 // the rate counts settled calls only
	e.nprobe, e.total = 0, 0
	e.settledAt = int64(e.calls)
	switch {
	case e.firstSettled < 0:
		e.firstSettled = e.settledAt
		e.last = int16(e.cur) // Changes count from the first settled call
	case e.probing:
		// A budgeted trial's verdict: evidence, not noise.
	case e.cur != e.settled:
		e.switches++
		e.deaf = 0
	case e.confirming:
		// The scheduled look found the same arm: that is no
		// evidence that drift windows fire on noise.
	case e.episodes > 1:
		e.deaf = min(e.deaf+1, 5) // explored for nothing: hear drift less often
	}
	e.settled = e.cur
	e.confirming = false
}

// reexplore starts a new episode around the current arm, seeded with the
// drift window's samples; all other estimates are dropped as stale.
func (e *entry) reexplore(c *Config) {
	for i := range e.st {
		e.st[i] = armStat{}
	}
	if !e.confirming || c.ConfirmBlock == 1 {
		// The drift window's single calls seed cur; a confirmation in
		// blocks samples cur in blocks too, as it does the others.
		cur := &e.st[e.cur]
		for _, v := range e.win[max(0, e.nwin-maxSamples):e.nwin] {
			cur.add(v, c.Stat)
		}
	}
	e.nwin = 0
	if int(e.cur) == e.set.native && len(e.set.arms) > 1 {
		e.cur = e.grid0 // Native stays measured; climb the grid again from the model's best
	}
	e.state = Exploring
	e.moves = 0
	e.episodes++
	e.advance(c)
}

// samplesPerArm is R for this episode: the confirmation, a look the key
// did not need by any sign, takes every arm's full ring (maxSamples), so
// that it leaves the settled arm on firmer evidence than the first
// exploration's.
func (e *entry) samplesPerArm(c *Config) int {
	if e.confirming {
		return maxSamples // SamplesPerArm is at most maxSamples
	}
	return c.SamplesPerArm
}

// schedule lists the arms to sample next: the current arm if it lacks
// samples, then its unsampled neighbours and Native, most promising (by
// the model) first.
func (e *entry) scheduleCalls(c *Config) {
	r := e.samplesPerArm(c)
	e.nprobe, e.total = 0, 0
	add := func(a uint8) {
		s := &e.st[a]
		if s.measured(r) {
			return
		}
		need := r - s.n
		if s.n == 0 && a != e.cur && e.prior[a] > c.Reject*e.prior[e.cur] {
			// An arm the model expects to lose by far gets the calls
			// early rejection looks at first: it may spare the rest.
			need = rejectAfter(c)
		}
		e.probe[e.nprobe], e.need[e.nprobe] = a, uint8(need)
		e.nprobe++
		e.total += need
	}
	add(e.cur)
	first := e.nprobe
	if e.probing {
		add(uint8(e.cand)) // a budgeted trial: the incumbent and one candidate
	} else {
		for _, nb := range e.set.nbr[e.cur] {
			add(nb)
		}
		if nat := e.set.native; nat >= 0 && nat != int(e.cur) {
			add(uint8(nat))
		}
	}
	// insertion sort of the neighbours by prior, then index
	for i := first + 1; i < e.nprobe; i++ {
		for j := i; j > first; j-- {
			a, b := e.probe[j-1], e.probe[j]
			if e.prior[b] < e.prior[a] || (e.prior[b] == e.prior[a] && b < a) {
				e.probe[j-1], e.probe[j] = b, a
				e.need[j-1], e.need[j] = e.need[j], e.need[j-1]
				continue
			}
			break
		}
	}
	// The calls' order: round robin over the probes (cur, then the
	// others by prior), one call each per round, so that whatever
	// disturbs the machine for a stretch of calls (a burst of other load,
	// the runtime's start-up) falls on every arm alike rather than on
	// the one arm whose block it hits. The device's 1 x 16 runs ranked
	// two arms 13-15% apart the wrong way round from blocks of five.
	// Under CostPenult a call after one of another arm is no sample, so
	// each arm's calls stay together there.
	n := 0
	if c.Cost == CostPenult || e.probing {
		// A trial's arms each in one run: the incumbent's calls cost
		// nothing beyond themselves, the candidate pays one warm-up.
		for i := 0; i < e.nprobe; i++ {
			for range e.need[i] {
				e.seq[n] = e.probe[i]
				n++
			}
		}
	} else {
		for round := uint8(0); n < e.total; round++ {
			for i := 0; i < e.nprobe; i++ {
				if e.need[i] > round {
					e.seq[n] = e.probe[i]
					n++
				}
			}
		}
	}
}

// peek returns k's entry, or a fresh one that is not kept (so that
// inspecting a key does not change the tuner's state or fingerprint).
func (t *Tuner) peek(k Key) *entry {
	if e := t.started(pack(k), k); e != nil {
		return e
	}
	return t.newEntry(k)
}

// Arms returns the arms of key k, in index order.
func (t *Tuner) Arms(k Key) []Arm {
	return slices.Clone(t.peek(k).set.arms)
}

// Predicted returns the model's time for arm a on key k (NaN if a is not
// one of k's arms).
func (t *Tuner) Predicted(k Key, a Arm) float64 {
	e := t.peek(k)
	if i := e.set.index(a); i >= 0 {
		return e.prior[i]
	}
	return math.NaN()
}

// Info describes a key's state.
type Info struct {
	Key      Key
	Arm      Arm     // current arm
	State    State   // exploring or frozen
	Estimate float64 // measured seconds of Arm (frozen estimate; NaN if unmeasured)
	Prior    float64 // model's seconds for Arm
	Calls    uint64  // calls recorded
	Samples  uint64  // samples committed
	Moves    int     // hill-climbing moves this episode
	Episodes int     // explorations started (1 + re-explorations, the confirmation included)
	// Confirmed: the scheduled confirmation (Config.ConfirmCalls) has
	// started (or the key came from a table and needs none).
	Confirmed bool
	SettledAt int64 // calls recorded when the key last froze (-1: never)
	// FirstSettledAt is the calls recorded when the key first froze (-1:
	// never; 0 for a key loaded from a table).
	FirstSettledAt int64
	// Switches counts the freezes on another arm than the freeze before;
	// Changes the calls, after the first freeze, whose arm differed from
	// the key's previous call (later explorations' probes included).
	Switches, Changes uint64
	// Cost and Skew are running means of the committed calls' cost (see
	// Config.Cost) and arrival skew (last entry minus first), in seconds;
	// 0 before the first commit.
	Cost, Skew float64
	Stride     int // a settled key records one call in Stride
	Measured   []ArmSample
}

// ArmSample is an arm's measured estimate in the current episode.
type ArmSample struct {
	Arm      Arm
	Estimate float64
	Samples  int
}

// Info returns the state of key k; false if the tuner has not seen it.
func (t *Tuner) Info(k Key) (Info, bool) {
	e := t.started(pack(k), k)
	if e == nil {
		return Info{}, false
	}
	return e.info(), true
}

func (e *entry) info() Info {
	in := Info{Key: e.key, Arm: e.set.arms[e.cur], State: e.state, Prior: e.prior[e.cur],
		Calls: e.calls, Samples: e.samples, Moves: e.moves, Episodes: e.episodes, SettledAt: e.settledAt,
		FirstSettledAt: e.firstSettled, Confirmed: e.confirmed, Switches: e.switches, Changes: e.changes, Cost: e.cost, Skew: e.skew, Stride: e.stride}
	switch {
	case e.state == Frozen:
		in.Estimate = e.est
	case e.st[e.cur].n > 0:
		in.Estimate = e.st[e.cur].est
	default:
		in.Estimate = math.NaN()
	}
	for i, s := range e.st {
		if s.n > 0 {
			in.Measured = append(in.Measured, ArmSample{e.set.arms[i], s.est, s.n})
		}
	}
	return in
}

// Infos returns every key's state, sorted by key.
func (t *Tuner) Infos() []Info {
	ks := make([]uint64, 0, len(t.keys)+len(t.starts))
	for k := range t.keys {
		ks = append(ks, k)
	}
	for k := range t.starts {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	out := make([]Info, 0, len(ks))
	for _, k := range ks {
		out = append(out, t.started(k, unpack(k)).info())
	}
	return out
}

// Measured reports whether some key has been called and has samples
// (Info's Calls and Samples both above 0): whether a table saved now
// holds anything this tuner's calls saw. It answers what a scan of Infos
// would, without making an entry (every arm priced) for each key of a
// loaded table that was never called.
func (t *Tuner) Measured() bool {
	for _, e := range t.keys {
		if e.calls > 0 && e.samples > 0 {
			return true
		}
	}
	return false
}

// Fingerprint hashes everything Choose depends on (configuration, model,
// every key's committed state and the pending batch's layout). Ranks whose
// fingerprints are equal make the same choices; the engine can check it
// once after setup with a min- and a max-allreduce.
func (t *Tuner) Fingerprint() uint64 {
	h := fnv.New64a()
	var b [8]byte
	u := func(v uint64) { binary.LittleEndian.PutUint64(b[:], v); h.Write(b[:]) }
	f := func(v float64) { u(math.Float64bits(v)) }
	cj, _ := json.Marshal(t.cfg)
	mj, _ := json.Marshal(t.model)
	h.Write(cj)
	h.Write(mj)
	ks := make([]uint64, 0, len(t.keys))
	for k := range t.keys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	// The keys only a table's start names yet: the key and its arm.
	ss := make([]uint64, 0, len(t.starts))
	for k := range t.starts {
		ss = append(ss, k)
	}
	slices.Sort(ss)
	for _, k := range ss {
		st := t.starts[k]
		u(k)
		u(uint64(st.idx))
		u(boolBits(st.verdict))
		f(st.est)
		u(st.samples)
	}
	for _, k := range ks {
		e := t.keys[k]
		u(k)
		u(uint64(e.state))
		u(uint64(e.cur))
		u(uint64(e.pend))
		u(e.fcount)
		u(uint64(e.moves))
		u(uint64(e.strikes))
		u(uint64(e.stride))
		f(e.rate)
		u(uint64(e.deaf))
		u(boolBits(e.confirmed, e.confirming, e.probing))
		f(e.est)
		f(e.elapsed)
		f(e.spent)
		u(e.due)
		u(uint64(e.cand) | uint64(e.pick)<<16)
		for _, b := range e.tried {
			u(boolBits(b))
		}
		for i := 0; i < e.nwin; i++ {
			f(e.win[i])
		}
		for i := range e.st {
			u(uint64(e.st[i].n))
			f(e.st[i].est)
			if e.st[i].rejected {
				u(1)
			}
		}
	}
	f(t.ovh)
	u(uint64(t.np))
	for i := 0; i < t.np; i++ {
		u(pack(t.pk[i].key))
		u(uint64(t.pa[i]))
		u(uint64(t.pw[i]) | uint64(t.pb[i])<<16)
	}
	u(uint64(t.units))
	return h.Sum64()
}

// median returns the median of v, reordering v. NaN for an empty slice.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	sortSmall(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// sortSmall sorts v: insertion sort for the learner's short windows (no
// allocation), sort.Float64s otherwise.
func sortSmall(v []float64) {
	if len(v) > 24 {
		sort.Float64s(v)
		return
	}
	for i := 1; i < len(v); i++ {
		x := v[i]
		j := i - 1
		for j >= 0 && v[j] > x {
			v[j+1] = v[j]
			j--
		}
		v[j+1] = x
	}
}

// boolBits packs flags into a word for the fingerprint.
func boolBits(bs ...bool) uint64 {
	var v uint64
	for i, b := range bs {
		if b {
			v |= 1 << i
		}
	}
	return v
}
