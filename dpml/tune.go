package dpml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
)

// The tuner (package costmodel) picks the variant, l and k of every call
// that forces nothing. It is a deterministic state machine fed, every few
// calls, with the calls' entry and exit times on a clock common to the
// ranks (two small non-blocking max-allreduces per batch, each completed
// DPML_TUNER_LAG calls after it starts: the cost of a call is the
// second-to-last exit after the last entry, the arrival skew kept apart),
// so every rank takes the same decision on every call without a broadcast
// per call and no call waits for the exchange's slowest rank. DPML_TUNER=static turns it off (the built-in
// default policy then decides); DPML_TUNING_FILE names a table to start from
// and to save to at Close.

// elemClass and opClass map kinds and ops to the tuner's classes (filled
// from the kinds' and ops' own properties, not from their order).
var (
	elemClass [mpi.KindComplex128 + 1]costmodel.ElemClass
	opClass   [mpi.OpBxor + 1]costmodel.OpClass
)

func init() {
	// What every communicator's setup reads and nothing changes during
	// a run, prepared while the program starts.
	go func() {
		leaders.Prefetch()
		costmodel.Prefetch()
	}()
	for _, k := range mpi.Kinds() {
		elemClass[k] = elemClassOf(k)
	}
	for _, op := range mpi.Ops() {
		opClass[op] = costmodel.OpClassOf(op.String())
	}
}

// elemClassOf is the tuner's class of element kind k.
func elemClassOf(k mpi.Kind) costmodel.ElemClass {
	switch {
	case k.IsInteger():
		return costmodel.ElemInt
	case k == mpi.KindFloat32:
		return costmodel.ElemFloat32
	case k == mpi.KindFloat64:
		return costmodel.ElemFloat64
	case k.IsComplex():
		return costmodel.ElemComplex
	}
	return costmodel.ElemAny
}

// tunerTreeBytes is the learner's Config.TreeBytes for a communicator of
// nodes nodes whose engine serves trees up to treeBytes (DPML_TREE_BYTES;
// 0: the tree is off, and so are its arms). On several nodes the tree's
// arms serve buckets starting at up to 16 KiB (or treeBytes): there the
// leaders' inter-node step dominates, and l trees over disjoint
// partitions won at 16 KiB (4x8: 39.7 us against 40.5 for copies). On one
// node they stop at fusedMaxBytes. There a single tree's back-to-back period loses to the copies
// from 4 KiB (1x32: 15.0 against 10.2 us at 4 KiB, 41.6 against 20.4 at
// 16 KiB; 1x16: 11.3 against 6.8 at 4 KiB), while its samples under the
// learner's cost rule read low (1x32, 16 KiB: 13.6 us), so the first
// exploration settled on trees there and kept them until the scheduled
// confirmation: with 1000 tuning calls, auto ran 1.47x the best plan at
// 4 KiB and 2.25x at 16 KiB.
func tunerTreeBytes(treeBytes, nodes int) int {
	if treeBytes <= 0 {
		return -1
	}
	if nodes == 1 {
		return fusedMaxBytes
	}
	return max(treeBytes, 16<<10)
}

// setupTuner builds the tuner (collective: rank 0 reads the tuning file and
// broadcasts it, so all ranks start from the same state). It takes the same
// collectives on every rank whatever fails, given the settings New agreed
// on (DPML_TUNER, DPML_TUNING_FILE), so New can agree on its outcome.
func (c *Comm) setupTuner() error {
	mode, err := config.Enum(config.Tuner)
	if err != nil {
		return err // agreed at New: the same on every rank
	}
	cfg := costmodel.DefaultConfig()
	switch mode {
	case "static":
		return nil
	case "model":
		cfg.Mode = costmodel.ModeModel
	default:
		cfg.Mode = costmodel.ModeLearn
	}
	stat, err := config.Enum(config.TunerStat)
	if err != nil {
		return err
	}
	cfg.Stat = costmodel.Stat(slices.Index(costmodel.Stats, stat))
	cost, err := config.Enum(config.TunerCost)
	if err != nil {
		return err
	}
	cfg.Cost = costmodel.Cost(slices.Index(costmodel.Costs, cost))
	if cfg.SamplesPerArm, err = config.Int(config.TunerSamples); err != nil {
		return err
	}
	if cfg.ConfirmCalls, err = config.Int(config.TunerConfirm); err != nil {
		return err
	}
	if c.xchg.lag, err = config.Int(config.TunerLag); err != nil {
		return err
	}
	budget, err := config.Int(config.TunerBudget)
	if err != nil {
		return err
	}
	switch {
	case budget < 0:
		cfg.Budget = -1
	case budget == 0:
		cfg.Budget = 1e-12 // nothing is ever paid for
	default:
		cfg.Budget = float64(budget) / 100
	}
	ring, kw, err := config.BytesOr(config.TunerRing)
	if err != nil {
		return err
	}
	cfg.RingBytes = -1 // the ring is a forced plan's only
	if kw == "" {
		cfg.RingBytes = int(min(ring, math.MaxInt32))
	}
	_, defSeg := c.defaultPlan(0)
	cfg.SegmentBytes = min(c.segBudget, defSeg)
	cfg.CMA = c.cma // arms with cross-memory attach where the kernel permits it
	cfg.TreeBytes = tunerTreeBytes(c.treeBytes, c.nodes)
	// The in-network offload's arms, where one is attached (the same on
	// every rank: setupOffload agreed on it).
	if c.off != nil {
		cfg.OffloadBytes, cfg.OffloadLeaders = c.off.bytes, 1
		if c.off.socket {
			cfg.OffloadLeaders = c.off.leaders
		}
	}
	c.tuningFile, _ = config.Get(config.TuningFile)
	var tb *costmodel.Table // nil: the built-in table
	var lerr error
	if c.profileMode, lerr = config.Enum(config.Profile); lerr != nil {
		return lerr // agreed at New: the same on every rank
	}
	if c.tuningFile == "" && c.profileMode != "off" && cfg.Mode == costmodel.ModeLearn {
		tb, lerr = c.loadProfile()
	}
	if lerr == nil && c.tuningFile != "" {
		var data []byte
		if data, lerr = c.loadTuningFile(); lerr == nil && data != nil {
			tb, lerr = parseTuningTable(data)
			if lerr != nil {
				lerr = fmt.Errorf("%s: %w", c.tuningFile, lerr)
			}
		}
	}
	if lerr == nil {
		if tb == nil {
			c.tuner, lerr = costmodel.NewTunerFromDefault(cfg)
		} else {
			c.tuner, lerr = costmodel.NewTunerFromTable(cfg, tb)
		}
		if lerr != nil {
			lerr = fmt.Errorf("%w: tuner: %w", ErrSetup, lerr)
		}
	}
	// Every rank, failed or not, takes the fingerprint exchange; the
	// hosts' boot ids ride along (do all ranks read one clock?).
	var fp uint64
	if c.tuner != nil {
		fp = c.tuner.Fingerprint()
	}
	boot := bootHash(c.rank)
	buf := []uint64{fp, ^fp, boot, ^boot}
	if err := mpi.AllreduceInPlace(c.world, buf, mpi.OpMax); err != nil {
		return errors.Join(lerr, fmt.Errorf("%w: tuner fingerprint: %w", ErrSetup, err))
	}
	if lerr != nil {
		c.tuner = nil
		return lerr
	}
	if buf[0] != ^buf[1] {
		c.tuner = nil
		return fmt.Errorf("%w: the tuner's starting state differs between ranks (its segment size follows each node's last-level cache: set %s to the same value everywhere)", ErrMismatch, config.SegmentBytes)
	}
	if buf[2] != ^buf[3] && cfg.Mode == costmodel.ModeLearn {
		// Several hosts: the same decision on every rank (buf is).
		if err := c.estimateClockOffset(); err != nil {
			c.tuner = nil
			return err
		}
	}
	return nil
}

// maxTableBytes bounds a tuning table file.
const maxTableBytes = 64 << 20

// loadTuningFile reads d.tuningFile on rank 0 and broadcasts it (collective
// over d.world). It returns nil data when the file does not exist yet (the
// tuner starts from the default table and Close saves it there).
func (c *Comm) loadTuningFile() ([]byte, error) {
	var data []byte
	var rerr error
	n := []int64{0} // -1: unusable; 0: no file yet
	if c.rank == 0 {
		// Refused now rather than at Close, where the run's learning
		// would be lost: a table Close could not save.
		if rerr = costmodel.CheckTableFile(c.tuningFile); rerr != nil {
			rerr = fmt.Errorf("%w: %w", ErrConfig, rerr)
		} else {
			data, rerr = readTuningFile(c.tuningFile)
		}
		switch {
		case rerr != nil:
			n[0] = -1
		default:
			n[0] = int64(len(data))
		}
	}
	if err := mpi.Bcast(c.world, n, 0); err != nil {
		return nil, fmt.Errorf("%w: broadcast tuning table: %w", ErrSetup, err)
	}
	switch {
	case n[0] < 0 && rerr != nil:
		return nil, rerr
	case n[0] < 0:
		return nil, fmt.Errorf("%w: rank 0 could not read the tuning table %s", ErrConfig, c.tuningFile)
	case n[0] == 0:
		return nil, nil
	}
	if c.rank != 0 {
		data = make([]byte, n[0])
	}
	if err := mpi.Bcast(c.world, data, 0); err != nil {
		return nil, fmt.Errorf("%w: broadcast tuning table: %w", ErrSetup, err)
	}
	return data, nil
}

// readTuningFile reads a tuning table: nil, nil when the file does not
// exist. It never blocks on a FIFO or a device (it opens without waiting
// and refuses anything but a regular file), and
// an empty file is an error rather than a table to overwrite.
func readTuningFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: tuning table: %w", ErrConfig, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: tuning table: %w", ErrConfig, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: tuning table %s is %s, not a regular file", ErrConfig, path, costmodel.FileKind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTableBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: tuning table: %w", ErrConfig, err)
	case len(data) > maxTableBytes:
		return nil, fmt.Errorf("%w: tuning table %s is larger than %d bytes", ErrConfig, path, maxTableBytes)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, fmt.Errorf("%w: tuning table %s is empty (remove it to start from the default table)", ErrConfig, path)
	}
	return data, nil
}

// parseTuningTable parses exactly one JSON tuning table: trailing data
// after it (a second document, garbage) is an error, not ignored.
func parseTuningTable(data []byte) (*costmodel.Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a JSON tuning table: %w", ErrConfig, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON tuning table (at byte %d)", ErrConfig, dec.InputOffset())
	}
	tb, err := costmodel.ReadTable(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return tb, nil
}

// tuned reports whether a call with override o is the tuner's to decide.
func (c *Comm) tuned(o Override, count, es int) bool {
	// Forcing any part of the plan (the intra-node path included: it is
	// one of the tuner's arms) takes the call out of the tuner's hands.
	return c.tuner != nil && count > 0 && c.nodes != c.size &&
		o == (Override{}) && c.fixed == (Override{}) && c.env == (Override{})
}

// keyState returns the tuning key of a call and its learner state, kept
// for the last (type, op, count) seen: calls back to back of one size, the
// common case, skip the key's lookup.
func (c *Comm) keyState(kind mpi.Kind, op mpi.Op, count int) (costmodel.Key, costmodel.KeyState) {
	m := &c.keyMemo
	if !m.valid || m.kind != kind || m.op != op || m.count != count {
		k := c.tunerKey(kind, op, count)
		*m = keyMemo{valid: true, kind: kind, op: op, count: count, key: k, st: c.tuner.State(k)}
	}
	return m.key, m.st
}

// keyMemo is keyState's memo.
type keyMemo struct {
	valid bool
	kind  mpi.Kind
	op    mpi.Op
	count int
	key   costmodel.Key
	st    costmodel.KeyState
}

// tunerKey is the tuning key of a call.
func (c *Comm) tunerKey(kind mpi.Kind, op mpi.Op, count int) costmodel.Key {
	return costmodel.MakeKey(elemClass[kind], opClass[op], count*kind.Size(),
		costmodel.Layout{Nodes: c.nodes, PPN: c.minPPN})
}

// observe feeds one call's entry and exit (on the tuner's clock, now; 0
// and 0 when the tuner did not ask for them, see Tuner.Timed) to the
// tuner; every batch it starts the commit step (collective, at the same
// call on every rank; exchange and advanceExchange): one max-allreduce (each sample's last and first entry,
// longest duration, last exit), then, unless DPML_TUNER_COST=last, a
// second one on the ranks' exits after the last entry in integer
// nanoseconds: a max with the last rank excluded (the default: the call's
// cost is the second-to-last exit) or a sum (mean); the arrival skew is
// the entries' spread.
//
// It also tells the tuner what it has cost this rank since the last
// commit (NoteOverhead): that commit step's time and the timed trips
// (tunOvh).
func (c *Comm) observe(ks costmodel.KeyState, arm costmodel.Arm, entry, exit int64) error {
	if !ks.Record(arm, float64(entry)*1e-9, float64(exit)*1e-9) {
		return nil
	}
	return c.exchange()
}

// exchangeLag is how many of the communicator's later calls through the
// engine each half of the tuner's exchange has to complete in
// (exchangeState): the ranks that arrive last at the call that starts it
// are waited for by nobody, and the calls between progress it.
const exchangeLag = 8

// exchangeState is the tuner's commit step in flight: the max-allreduce
// of the buffered samples (phase 1), then, if the cost rule needs it, the
// second allreduce (phase 2), each started at one call and completed at
// the exchangeLag-th call through the engine after it, the same call on
// every rank, where Commit then runs. The tuner is held meanwhile
// (costmodel.Tuner.Hold). lag 0 (DPML_TUNER_LAG=0): both run blocking at
// the call that starts them, as a blocking collective would.
//
// On one node (and lag at least 2) the step needs no MPI at all: each rank
// writes its buffer into its own exchange area of the node segment
// (nodeSegment.xchgArea) and, at the lag-th call, reads every rank's and
// reduces them itself, in local-rank order, so every rank gets the same
// values. The calls in between are what makes that safe: a rank writes
// after its call's collective (or at a call's entry), and a call with data
// completes on no rank before every local rank has entered it, so at the
// entry of the second call after the write every area is written. The
// samples alternate between two areas (a step may start at the entry of
// the call where the one before committed, while a slower rank reads);
// the exits' area is written again only lag calls after its last reader.
// Calls without data do not count there.
type exchangeState struct {
	phase int // 0: none in flight
	calls int // calls through the engine since the phase started
	lag   int
	req   *mpi.Request
	buf   []float64
	sum   []int64
	shm   bool // this step goes through the node segment
	gen   int  // commit steps started through the node segment
	shms  int  // and completed (tests)
}

// shmExchange reports whether the commit step can go through the node
// segment (exchangeState).
func (c *Comm) shmExchange() bool {
	return c.xchg.lag >= 2 && c.nodes == 1 && c.seg != nil
}

// The exchange areas (nodeSegment.xchgArea) of the samples of the commit
// step in flight, and of the exits.
func (x *exchangeState) samplesArea() int { return x.gen % 2 }

const exitsArea = 2

// xchgPublish writes v (n 8-byte values) to this rank's exchange area a.
func (c *Comm) xchgPublish(a int, v unsafe.Pointer, n int) {
	memmove(c.seg.xchgArea(a, c.local), v, 8*n)
}

// xchgFold sets buf to the element-wise sum (or maximum) of every local
// rank's exchange area a, in local-rank order: the same values on every
// rank (a maximum is exact, and so is a sum of integers).
func xchgFold[T float64 | int64](c *Comm, a int, buf []T, sum bool) {
	xchgTouch(c, a, 8*len(buf))
	for i := range c.ppn {
		src := unsafe.Slice((*T)(c.seg.xchgArea(a, i)), len(buf))
		if i == 0 {
			copy(buf, src)
			continue
		}
		for j, v := range src {
			switch {
			case sum:
				buf[j] += v
			case v > buf[j]:
				buf[j] = v
			}
		}
	}
}

// xchgTouch reads one word of each line of the first n bytes of every
// local rank's exchange area a. Each rank wrote its own area, so each line
// is a transfer from another core's cache; the fold's loop takes them one
// area at a time, and on 32 ranks spent about 14 us per commit step on
// them. As independent loads issued together the transfers overlap, and
// the fold then reads lines already here.
func xchgTouch(c *Comm, a, n int) {
	var t uint64
	for i := range c.ppn {
		p := c.seg.xchgArea(a, i)
		for off := 0; off < n; off += alignBytes {
			t += *(*uint64)(unsafe.Add(p, off))
		}
	}
	xchgSink = t
}

// xchgSink keeps xchgTouch's loads.
var xchgSink uint64

// xchgBarrier waits for every local rank (Close, where no later call
// separates the writes from the reads).
func (c *Comm) xchgBarrier() error {
	c.watch.enter(stepTuner)
	err := c.node.Barrier()
	c.watch.leave()
	return err
}

// exchange starts the tuner's commit step (collective over c.world: every
// rank's learner asks for it on the same call): the buffered samples'
// times max-allreduced (and the second exchange its cost rule needs),
// then Commit, completed by advanceExchange at later calls. A step already
// in flight is not restarted: the tuner is held until it commits.
func (c *Comm) exchange() error {
	if c.xchg.phase != 0 {
		return nil
	}
	c.tuner.NoteOverhead(float64(c.tunOvh) * 1e-9)
	c.tunOvh = 0
	t0 := nanotime()
	x := &c.xchg
	x.buf, x.sum, x.calls = c.tuner.Pending(), nil, 0
	var err error
	if x.lag == 0 {
		c.watch.enter(stepTuner)
		err = mpi.AllreduceInPlace(c.world, x.buf, mpi.OpMax)
		c.watch.leave()
		if err == nil && c.tuner.Second() != costmodel.SecondNone {
			x.sum = c.tuner.Exits(x.buf)
			c.watch.enter(stepTuner)
			err = mpi.AllreduceInPlace(c.world, x.sum, c.secondOp())
			c.watch.leave()
		}
		if err == nil {
			tc := nanotime()
			err = c.tuner.Commit(x.buf, x.sum)
			c.books.commitNs += nanotime() - tc
		}
		c.noteStep(t0) // the next batch's share
		if err != nil {
			return fmt.Errorf("dpml: tuner exchange: %w", err)
		}
		return nil
	}
	x.shm = c.shmExchange()
	if x.shm {
		x.gen++
		c.xchgPublish(x.samplesArea(), unsafe.Pointer(unsafe.SliceData(x.buf)), len(x.buf))
	} else {
		x.req, err = mpi.IallreduceInPlace(c.world, x.buf, mpi.OpMax)
	}
	c.noteStep(t0)
	if err != nil {
		return fmt.Errorf("dpml: tuner exchange: %w", err)
	}
	x.phase = 1
	c.tuner.Hold()
	return nil
}

// tunerBooks is what the tuner cost this rank over the communicator's
// life, by part, for DPML_VERBOSE: its commit steps' own time (the
// exchange's start, the lag calls' tests, the folds or waits, Commit),
// and the trips into Go and back of timed calls whose plan libdpml.so's C
// layer runs itself when the learner needs no time (trip).
type tunerBooks struct {
	stepNs int64
	// foldNs, commitNs: the parts of stepNs in the folds or waits of
	// the exchange, and in Commit.
	foldNs, commitNs int64
	trips  uint64
	tripNs int64
}

// trip books a timed call's trip of ns nanoseconds (0: the plan pays
// its trip on every call; not the tuner's).
func (b *tunerBooks) trip(ns int64) {
	if ns > 0 {
		b.trips++
		b.tripNs += ns
	}
}

// noteStep books the commit step's work since t0 (nanotime) as the
// tuner's overhead.
func (c *Comm) noteStep(t0 int64) {
	d := nanotime() - t0
	c.tunOvh += d
	c.books.stepNs += d
}

// secondOp is the reduction of the tuner's second exchange.
func (c *Comm) secondOp() mpi.Op {
	if c.tuner.Second() == costmodel.SecondMax {
		return mpi.OpMax
	}
	return mpi.OpSum
}

// advanceExchange counts a call through the engine for the exchange in
// flight: it tests the request (MPI progresses a non-blocking collective
// only inside MPI calls), and at the exchangeLag-th call it waits for it
// (bounded by DPML_TIMEOUT) and starts the second phase or commits. The
// phase ends at the same call on every rank whatever each rank's test
// saw. all: complete it now (Close), at the same point on every rank.
func (c *Comm) advanceExchange(all bool) error {
	x := &c.xchg
	for x.phase != 0 {
		t0 := nanotime()
		x.calls++
		if x.calls < x.lag && !all {
			var err error
			if !x.shm {
				_, err = x.req.Test()
			}
			c.noteStep(t0)
			if err != nil {
				return fmt.Errorf("dpml: tuner exchange: %w", err)
			}
			return nil
		}
		var err error
		tf := nanotime()
		switch {
		case x.shm && all:
			err = c.xchgBarrier()
		case !x.shm:
			c.watch.enter(stepTuner)
			err = x.req.Wait()
			c.watch.leave()
		}
		if err == nil && x.shm && x.phase == 1 {
			xchgFold(c, x.samplesArea(), x.buf, false)
		}
		if err == nil && x.shm && x.phase == 2 {
			xchgFold(c, exitsArea, x.sum, c.secondOp() == mpi.OpSum)
		}
		c.books.foldNs += nanotime() - tf
		if err == nil && x.phase == 1 && c.tuner.Second() != costmodel.SecondNone {
			x.sum = c.tuner.Exits(x.buf)
			if x.shm {
				c.xchgPublish(exitsArea, unsafe.Pointer(unsafe.SliceData(x.sum)), len(x.sum))
			} else {
				x.req, err = mpi.IallreduceInPlace(c.world, x.sum, c.secondOp())
			}
			x.phase, x.calls = 2, 0
			c.noteStep(t0)
			if err != nil {
				return fmt.Errorf("dpml: tuner exchange: %w", err)
			}
			if !all {
				return nil
			}
			continue
		}
		x.phase, x.req = 0, nil
		if err == nil {
			tc := nanotime()
			err = c.tuner.Commit(x.buf, x.sum)
			c.books.commitNs += nanotime() - tc
			if x.shm {
				x.shms++
			}
		}
		c.noteStep(t0)
		if err != nil {
			return fmt.Errorf("dpml: tuner exchange: %w", err)
		}
	}
	return nil
}

// saveTuning writes the tuning table (rank 0, at Close): see
// costmodel.WriteTableFile.
func (c *Comm) saveTuning() error {
	if c.tuner == nil || c.tuningFile == "" || c.rank != 0 {
		return nil
	}
	c.tuner.SetProvenance(c.provenance(""))
	if err := costmodel.WriteTableFile(c.tuningFile, c.tuner.Table()); err != nil {
		return fmt.Errorf("%w: save tuning table: %w", ErrConfig, err)
	}
	return nil
}

// provenance is a saved table's provenance, with note.
func (c *Comm) provenance(note string) costmodel.Provenance {
	host, _ := os.Hostname()
	return costmodel.Provenance{
		Host: host, Cores: leaders.OnlineCPUs(), Layout: fmt.Sprintf("%dx%d", c.nodes, c.minPPN),
		MPI: strings.SplitN(mpi.LibraryVersion(), "\n", 2)[0], Date: time.Now().UTC().Format(time.RFC3339),
		Command: strings.Join(os.Args, " "), Note: note,
	}
}

// booksText is printTuner's account of this rank's books (tunerBooks)
// over the calls the learner recorded this run: what a recorded call
// cost beyond an unrecorded one, whole and by part.
func (c *Comm) booksText() string {
	b := &c.books
	n := c.tuner.Recorded()
	if n == 0 {
		return "; this rank recorded no call"
	}
	per := func(ns int64) float64 { return float64(ns) / float64(n) * 1e-3 }
	return fmt.Sprintf(" (the ranks' largest, recent commits); this rank over the run: %.2f us per recorded call (%d calls): %d commit steps %.2f (exchange %.2f, Commit %.2f), %d trips into Go %.2f",
		per(b.stepNs+b.tripNs), n, c.tuner.Commits(), per(b.stepNs), per(b.foldNs), per(b.commitNs), b.trips, per(b.tripNs))
}

// printTuner writes, at DPML_VERBOSE=1 (rank 0, at Close), the keys
// called and the tuner's agreed overhead per recorded call
// (Tuner.Overhead), which sets how sparsely a settled key samples (its
// stride); with perKey (DPML_VERBOSE=2) also what it learned per key: the plan, its state, calls, how often the settled plan
// changed (switches) and how many calls ran another plan than the call
// before (changes, probes included), and the running mean of a call's
// cost (from the last arrival) and of the arrival skew; in the heading,
// the tuner's agreed overhead per recorded call (Tuner.Overhead), which
// sets how sparsely a settled key samples (its stride).
func (c *Comm) printTuner(w io.Writer, perKey bool) {
	var used []costmodel.Info // keys this run called (a table's other entries are not news)
	for _, in := range c.tuner.Infos() {
		if in.Calls > 0 {
			used = append(used, in)
		}
	}
	fmt.Fprintf(w, "dpml: tuner, %d key(s) called, %.2f us of overhead per recorded call%s\n", len(used), c.tuner.Overhead()*1e6, c.booksText())
	if !perKey {
		return
	}
	fmt.Fprintf(w, "dpml: tuner per key: key | plan | state | calls | switches | changes | cost us | skew us | episodes | samples | stride\n")
	for _, in := range used {
		fmt.Fprintf(w, "dpml:   %v | %v | %v | %d | %d | %d | %.2f | %.2f | %d | %d | %d\n", in.Key, in.Arm, in.State, in.Calls,
			in.Switches, in.Changes, in.Cost*1e6, in.Skew*1e6, in.Episodes, in.Samples, in.Stride)
		// What the learner measured: each sampled arm's estimate (us)
		// and sample count, the evidence behind the plan above.
		var b strings.Builder
		for _, m := range in.Measured {
			if m.Samples > 0 {
				fmt.Fprintf(&b, " %v=%.2f/%d;", m.Arm, m.Estimate*1e6, m.Samples)
			}
		}
		if b.Len() > 0 {
			fmt.Fprintf(w, "dpml:     measured:%s\n", b.String())
		}
	}
}
