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
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
)

// The tuner (package costmodel) picks the variant, l and k of every call
// that forces nothing. It is a deterministic state machine fed, every few
// calls, with the calls' entry and exit times on a clock common to the
// ranks (one exchange per batch, through the node segment, where one rank
// per node folds the others' times, and among the nodes' folders,
// committed DPML_TUNER_LAG calls after it starts: the cost of a call is
// the second-to-last exit after the last entry, the arrival skew kept
// apart; exchangeState), so every rank takes the same decision on every
// call without a broadcast per call and no call waits for the exchange's
// slowest rank. DPML_TUNER=static turns it off (the built-in
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
	cfg := learn.DefaultConfig()
	switch mode {
	case "static":
		return nil
	case "model":
		cfg.Mode = learn.ModeModel
	default:
		cfg.Mode = learn.ModeLearn
	}
	stat, err := config.Enum(config.TunerStat)
	if err != nil {
		return err
	}
	cfg.Stat = learn.Stat(slices.Index(learn.Stats, stat))
	cost, err := config.Enum(config.TunerCost)
	if err != nil {
		return err
	}
	cfg.Cost = learn.Cost(slices.Index(learn.Costs, cost))
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
	if c.tuningFile == "" && c.profileMode != "off" && cfg.Mode == learn.ModeLearn {
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
			c.tuner, lerr = learn.NewTunerFromDefault(cfg)
		} else {
			c.tuner, lerr = learn.NewTunerFromTable(cfg, tb)
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
	if buf[2] != ^buf[3] && cfg.Mode == learn.ModeLearn {
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

// parsedTables keeps the tables this process parsed last, by their bytes:
// every communicator's setup reads the machine profile (or tuning file)
// again, and parsing a 25 KB profile cost each setup 0.2-0.5 ms on the
// 2-core development machine. A table is not changed after it is parsed
// (the tuner copies what it keeps), so the same bytes share one.
var parsedTables struct {
	mu   sync.Mutex
	data [4][]byte
	tb   [4]*costmodel.Table
	next int
}

// parseTuningTable parses exactly one JSON tuning table: trailing data
// after it (a second document, garbage) is an error, not ignored. Bytes
// parsed before in this process give the table parsed then.
func parseTuningTable(data []byte) (*costmodel.Table, error) {
	p := &parsedTables
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, d := range p.data {
		if d != nil && bytes.Equal(d, data) {
			return p.tb[i], nil
		}
	}
	tb, err := parseTable(data)
	if err == nil {
		p.data[p.next], p.tb[p.next] = bytes.Clone(data), tb
		p.next = (p.next + 1) % len(p.data)
	}
	return tb, err
}

// parseTable is parseTuningTable without the process's memory of tables.
func parseTable(data []byte) (*costmodel.Table, error) {
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
func (c *Comm) keyState(kind mpi.Kind, op mpi.Op, count int) (costmodel.Key, learn.KeyState) {
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
	st    learn.KeyState
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
func (c *Comm) observe(ks learn.KeyState, arm costmodel.Arm, entry, exit int64) error {
	if !ks.Record(arm, float64(entry)*1e-9, float64(exit)*1e-9) {
		return nil
	}
	return c.exchange()
}

// exchangeState is the tuner's commit step in flight. Through the node
// segment (foldExchange: DPML_TUNER_LAG of at least minFoldLag, the
// default) it is one exchange that only one rank per node reads:
//
//	call S        a call's record fills the learner's batch: the tuner
//	              is held
//	call S+1      every rank writes its Stamps into its own stamp area
//	              (nodeSegment.stampArea, alternating between commit steps)
//	call S+3      the node's folder (its first leader, c.pos 0) folds the
//	              node's stamps in local-rank order; on one node it writes
//	              the verdicts (learn.Tuner.Verdicts) into the node's
//	              verdict area, on several it sends its node's fold to
//	              the other nodes' folders and posts the receives of theirs
//	call S+lag-2  (several nodes) the folder completes them, merges
//	              the folds in node order and writes the verdicts
//	call S+lag    every rank reads the verdicts and commits them
//
// Each part runs in its call's first wait for the rank's peers, while
// they are not ready anyway (tunerIdle), or at the call's end if the call
// never waits (advanceFold): off the program's critical path wherever a
// rank waits. Calls counts the calls with data through the engine since
// S, the same on every rank. The calls in between are what makes the
// shared reads safe: a call with data completes on no rank before every
// local rank has entered it, so in the second call after a write (readLag)
// the write is done on every rank. The stamp areas alternate, and a
// verdict area is written again only two commit steps later, after every
// rank has read it. No rank but the folders makes an MPI call for the
// tuner, and those make one per step, progressed by the inter-node steps
// they run anyway.
//
// Otherwise (DPML_TUNER_LAG below minFoldLag) the step is two
// max-allreduces over all ranks (Pending, then the exits Commit's cost
// rule needs), each started at one call and completed at the lag-th call
// through the engine after it; lag 0: both blocking, at the call that
// starts them. The tuner is held while a step is in flight
// (learn.Tuner.Hold).
type exchangeState struct {
	phase int // 0: none in flight
	calls int // calls through the engine since the phase started
	lag   int
	req   *mpi.Request
	buf   []float64
	sum   []int64
	fold  bool // this step goes through the node segment (foldExchange)
	gen   int  // commit steps started through the node segment
	folds int  // and completed (tests)
	n     int  // the step's Stamps length
	// The folder's: its node's fold, merged with the other nodes'
	// (acc), every node's fold (all, several nodes), and how far the
	// step has gone (stage: 1 folded, 2 verdicts written).
	acc, all []float64
	stage    int
	// The folders' messages to and from the other nodes' (several
	// nodes): their requests, and pointers to them for Waitall.
	reqs []mpi.Request
	rp   []*mpi.Request
	// due: the step's work due in this call (dueFold...), run in its
	// first wait or at its end; idleErr, an error of that work in a wait,
	// returned at the end; idleNs, the time of the last run in a wait;
	// rehold: the call's commit ran inside it (stepDue); pub: this
	// rank's stamps of the step are written.
	pub     bool
	due     uint8
	idleErr error
	idleNs  int64
	rehold  bool
}

// minFoldLag is the least DPML_TUNER_LAG at which the commit step goes
// through the node segment: the stamps are read two calls after they are
// written, and the verdicts two calls after.
const minFoldLag = foldAt + readLag

// foldExchange reports whether the commit step goes through the node
// segment (exchangeState): the same answer on every rank.
func (c *Comm) foldExchange() bool {
	return c.xchg.lag >= minFoldLag && c.seg != nil
}

// folder reports whether this rank folds its node's stamps: the node's
// first leader, a member of the leader communicator of the nodes' first
// leaders.
func (c *Comm) folder() bool { return c.pos == 0 }

// publish writes this rank's Stamps of the step in flight into its stamp
// area of the step.
func (c *Comm) publish() {
	x := &c.xchg
	st := c.tuner.Stamps()
	x.n = len(st)
	memmove(c.seg.stampArea(x.gen%2, c.local), unsafe.Pointer(unsafe.SliceData(st)), 8*len(st))
	x.pub = true
}

// xchgBarrier waits for every local rank (Close, where no later call
// separates the writes from the reads).
func (c *Comm) xchgBarrier() error {
	c.watch.enter(stepTuner)
	err := c.node.Barrier()
	c.watch.leave()
	return err
}

// exchange starts the tuner's commit step (collective over c.world: every
// rank's learner asks for it on the same call), completed by
// advanceExchange at later calls (exchangeState). A step already in
// flight is not restarted: the tuner is held until it commits.
func (c *Comm) exchange() error {
	if c.xchg.phase != 0 {
		return nil
	}
	c.tuner.NoteOverhead(float64(c.tunOvh) * 1e-9)
	c.tunOvh = 0
	t0 := nanotime()
	x := &c.xchg
	x.buf, x.sum, x.calls, x.stage = nil, nil, 0, 0
	var err error
	if x.lag == 0 {
		x.buf = c.tuner.Pending()
		tf := nanotime()
		c.watch.enter(stepTuner)
		err = mpi.AllreduceInPlace(c.world, x.buf, mpi.OpMax)
		c.watch.leave()
		if err == nil && c.tuner.Second() != learn.SecondNone {
			x.sum = c.tuner.Exits(x.buf)
			c.watch.enter(stepTuner)
			err = mpi.AllreduceInPlace(c.world, x.sum, c.secondOp())
			c.watch.leave()
		}
		tc := nanotime()
		c.books.foldNs += tc - tf // the blocking allreduces are the exchange, and MPI waits
		c.books.waitNs += tc - tf
		if err == nil {
			err = c.tuner.Commit(x.buf, x.sum)
			c.books.commitNs += nanotime() - tc
		}
		c.noteStep(t0) // the next batch's share
		if err != nil {
			return fmt.Errorf("dpml: tuner exchange: %w", err)
		}
		return nil
	}
	x.fold = c.foldExchange()
	if x.fold {
		x.gen++
		x.pub = false // written at the next call (publish)
	} else {
		x.buf = c.tuner.Pending()
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
// exchange's start, the lag calls, the folds or waits, the commit),
// and the trips into Go and back of timed calls whose plan libdpml.so's C
// layer runs itself when the learner needs no time (trip).
type tunerBooks struct {
	stepNs int64
	// foldNs, commitNs: the parts of stepNs in the folds, gathers or
	// waits of the exchange, and in the commit; of foldNs, waitNs in MPI
	// waits, touchNs reading the other ranks' stamp lines in (the
	// folder), verdictNs turning the fold into verdicts and writing them.
	foldNs, commitNs, waitNs, touchNs, verdictNs int64
	// idleNs: the steps' work that ran inside waits for peers that were
	// still not ready when it ended (tunerIdle), not in stepNs.
	idleNs             int64
	idleRuns, idleLate int // runs inside waits, and of them the ones that outlasted the wait
	trips              uint64
	tripNs             int64
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
	if c.tuner.Second() == learn.SecondMax {
		return mpi.OpMax
	}
	return mpi.OpSum
}

// advanceExchange counts a call through the engine for the exchange in
// flight and takes the step's part due at it (exchangeState). Through
// MPI it tests the request (MPI progresses a non-blocking collective
// only inside MPI calls), and at the lag-th call it waits for it
// (bounded by DPML_TIMEOUT) and starts the second phase or commits. The
// phase ends at the same call on every rank whatever each rank's test
// saw. all: complete it now (Close), at the same point on every rank.
func (c *Comm) advanceExchange(all bool) error {
	x := &c.xchg
	if x.phase != 0 && x.fold {
		t0 := nanotime()
		err := c.advanceFold(all)
		c.noteStep(t0)
		if err != nil {
			return fmt.Errorf("dpml: tuner exchange: %w", err)
		}
		return nil
	}
	for x.phase != 0 {
		t0 := nanotime()
		x.calls++
		if x.calls < x.lag && !all {
			_, err := x.req.Test()
			c.noteStep(t0)
			if err != nil {
				return fmt.Errorf("dpml: tuner exchange: %w", err)
			}
			return nil
		}
		tf := nanotime()
		c.watch.enter(stepTuner)
		err := x.req.Wait()
		c.watch.leave()
		c.books.foldNs += nanotime() - tf
		c.books.waitNs += nanotime() - tf
		if err == nil && x.phase == 1 && c.tuner.Second() != learn.SecondNone {
			x.sum = c.tuner.Exits(x.buf)
			x.req, err = mpi.IallreduceInPlace(c.world, x.sum, c.secondOp())
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
		}
		c.noteStep(t0)
		if err != nil {
			return fmt.Errorf("dpml: tuner exchange: %w", err)
		}
	}
	return nil
}

// advanceFold is advanceExchange for a step through the node segment.
// Outside Close it only counts the call and marks the step's work due in
// it (stepDue); the work runs in the call's first wait for its peers
// (tunerIdle) or, if the call never waits, at its end (runDue). Either is
// inside the same call on every rank, which is all exchangeState's
// calendar needs.
func (c *Comm) advanceFold(all bool) error {
	x := &c.xchg
	if all {
		// Close: every rank's stamps, then the verdicts, are written
		// once every local rank has passed the barrier before reading.
		if !x.pub {
			c.publish()
		}
		if x.calls < foldAt {
			if err := c.xchgBarrier(); err != nil {
				return err
			}
		}
		if c.folder() {
			if err := c.foldNode(); err != nil {
				return err
			}
			if err := c.finishFold(false); err != nil {
				return err
			}
		}
		if err := c.xchgBarrier(); err != nil {
			return err
		}
		return c.commitFold()
	}
	x.calls++
	if !x.pub {
		x.due |= duePublish
	}
	if c.folder() {
		if x.calls >= foldAt && x.stage < 1 {
			x.due |= dueFold
		}
		if x.stage == 1 && x.calls > foldAt && x.calls < x.lag-readLag && c.nodes > 1 {
			// MPI progresses the messages only inside MPI calls.
			if _, err := x.reqs[0].Test(); err != nil {
				return err
			}
		}
		if x.calls >= x.lag-readLag && x.stage < 2 {
			x.due |= dueFinish
		}
	}
	if x.calls >= x.lag {
		x.due |= dueCommit
	}
	return nil
}

// The parts of a commit step through the node segment that a call can
// have due (exchangeState.due), in the order they run.
const (
	duePublish uint8 = 1 << iota // every rank writes its stamps (publish)
	dueFold                      // the folder folds its node's stamps (foldNode)
	dueFinish                    // it merges the nodes' folds, writes the verdicts (finishFold)
	dueCommit                    // every rank commits the verdicts (commitFold)
)

// stepDue runs the commit step's work due in this call. idle: inside a
// wait of the call (tunerIdle), where it leaves the merge of the nodes'
// folds for later in the call unless their messages have all arrived (a
// wait there would stall the call's own), and keeps errors for the
// call's end. A commit inside the call holds the tuner again over the
// rest of it (exchangeState.rehold): the call was chosen under the hold
// and is not timed. ran: some part ran.
func (c *Comm) stepDue(idle bool) (ran bool, err error) {
	x := &c.xchg
	due := x.due
	defer func() { ran = x.due != due }()
	if x.due&duePublish != 0 {
		x.due &^= duePublish
		c.publish()
	}
	if x.due&dueFold != 0 {
		x.due &^= dueFold
		if err := c.foldNode(); err != nil {
			return false, err
		}
	}
	if x.due&dueFinish != 0 {
		if idle && !c.foldsArrived() {
			return false, nil
		}
		x.due &^= dueFinish
		if err := c.finishFold(idle); err != nil {
			return false, err
		}
	}
	if x.due&dueCommit != 0 {
		x.due &^= dueCommit
		if err := c.commitFold(); err != nil {
			return false, err
		}
		c.tuner.Hold()
		x.rehold = true
	}
	return false, nil
}

// runDue runs what the call's waits left of its due work (stepDue), at
// the call's end, and returns the first error of that work in the call.
func (c *Comm) runDue() error {
	x := &c.xchg
	err := x.idleErr
	x.idleErr = nil
	if err == nil && x.due != 0 {
		t0 := nanotime()
		_, err = c.stepDue(false)
		c.noteStep(t0)
	}
	x.due = 0
	if err != nil {
		return fmt.Errorf("dpml: tuner exchange: %w", err)
	}
	return nil
}

// endHold ends the hold of a call whose commit ran inside it (stepDue),
// once the call is recorded.
func (c *Comm) endHold() {
	if c.xchg.rehold {
		c.xchg.rehold = false
		c.tuner.Release()
	}
}

// tunerIdle is the Comm as its waits' idle work (shm.IdleWork): the
// commit step's work due in the call, run while this rank waits for its
// peers. What ran while the peers were still not ready cost the program
// nothing and is booked apart (tunerBooks.idleNs); what outlasted the wait
// (Late) is the tuner's overhead like the work at a call's end.
type tunerIdle Comm

func (t *tunerIdle) Idle() bool {
	c := (*Comm)(t)
	x := &c.xchg
	if x.due == 0 || x.idleErr != nil || c.err != nil {
		return false
	}
	t0 := nanotime()
	ran, err := c.stepDue(true)
	x.idleErr = err
	if !ran && err == nil {
		return false // the folds' messages not in yet: nothing ran
	}
	x.idleNs = nanotime() - t0
	c.books.idleNs += x.idleNs
	c.books.idleRuns++
	return true
}

func (t *tunerIdle) Late() {
	c := (*Comm)(t)
	d := c.xchg.idleNs
	c.books.idleNs -= d
	c.books.idleLate++
	c.books.stepNs += d
	c.tunOvh += d
}

// foldsArrived reports whether the folders' messages of the step in
// flight have all completed (several nodes; one node has none).
func (c *Comm) foldsArrived() bool {
	for _, r := range c.xchg.rp {
		if ok, err := r.Test(); !ok && err == nil {
			return false
		}
	}
	return true
}

// The calendar of a commit step through the node segment, in calls
// through the engine after the one that starts it (exchangeState): what a
// rank writes in one call is read in the call readLag later, at the
// earliest (a call completes on no rank before every local rank has
// entered it, so every rank's previous call, and what it wrote in it, is
// over by then). The stamps are written in the first call, folded
// readLag calls later (foldAt), the verdicts written at the latest
// readLag calls before the commit (lag - readLag).
const (
	publishAt = 1
	readLag   = 2
	foldAt    = publishAt + readLag
)

// foldNode folds the node's stamps (the folder, once per step): on one
// node into the verdicts, on several into the node's fold, whose
// exchange among the folders it starts (point-to-point messages).
func (c *Comm) foldNode() error {
	x := &c.xchg
	if x.stage >= 1 {
		return nil
	}
	x.stage = 1
	tf := nanotime()
	defer func() { c.books.foldNs += nanotime() - tf }()
	fl := learn.FoldLen(x.n)
	if cap(x.acc) < fl {
		x.acc = make([]float64, learn.FoldValues)
	}
	acc := x.acc[:fl]
	tt := nanotime()
	touchStamps(c, x.gen%2, 8*x.n)
	c.books.touchNs += nanotime() - tt
	for i := range c.ppn {
		st := unsafe.Slice((*float64)(c.seg.stampArea(x.gen%2, i)), x.n)
		if err := learn.Fold(acc, st, i == 0); err != nil {
			return err
		}
	}
	if c.nodes == 1 {
		return c.writeVerdicts(acc)
	}
	// The folders' allgather, as point-to-point messages: on the device
	// (4x8, Open MPI 4.1) starting an MPI_Iallgather of a few hundred
	// values cost 66-143 us a step, posting the receives and sends about
	// a microsecond each.
	if cap(x.all) < c.nodes*fl {
		x.all = make([]float64, c.nodes*learn.FoldValues)
		x.reqs = make([]mpi.Request, 2*(c.nodes-1))
		x.rp = make([]*mpi.Request, len(x.reqs))
		for i := range x.reqs {
			x.rp[i] = &x.reqs[i]
		}
	}
	me := c.leaderComm.Rank()
	copy(x.all[me*fl:(me+1)*fl], acc)
	k := 0
	for j := range c.nodes {
		if j == me {
			continue
		}
		if err := mpi.IrecvReq(c.leaderComm, x.all[j*fl:(j+1)*fl], j, foldTag, x.rp[k]); err != nil {
			return err
		}
		if err := mpi.IsendReq(c.leaderComm, acc, j, foldTag, x.rp[k+1]); err != nil {
			return err
		}
		k += 2
	}
	return nil
}

// foldTag is the tag of the folders' messages on the leader
// communicator (below the ring's tags: ring.go).
const foldTag = ringTagBase - 1

// touchStamps reads one word of each line of the first n bytes of every
// local rank's stamp area a. Each rank wrote its own area, so each line
// is a transfer from another core's cache; the fold's loop takes them one
// area at a time, while independent loads issued together overlap the
// transfers, and the fold then reads lines already here (on the device
// the segment's reductions over 32 ranks spent about 14 us per commit
// step on the transfers without it).
func touchStamps(c *Comm, a, n int) {
	var t uint64
	for i := range c.ppn {
		p := c.seg.stampArea(a, i)
		for off := 0; off < n; off += alignBytes {
			t += *(*uint64)(unsafe.Add(p, off))
		}
	}
	touchSink = t
}

// touchSink keeps touchStamps' loads.
var touchSink uint64

// finishFold completes the folders' exchange (several nodes), merges
// the nodes' folds in node order and writes the verdicts. arrived: the
// messages are known complete (foldsArrived), so no watched wait is
// needed (inside another wait of the call, whose watch it would end).
func (c *Comm) finishFold(arrived bool) error {
	x := &c.xchg
	if x.stage >= 2 {
		return nil
	}
	tf := nanotime()
	defer func() { c.books.foldNs += nanotime() - tf }()
	if !arrived {
		tw := nanotime()
		c.watch.enter(stepTuner)
		err := mpi.Waitall(x.rp)
		c.watch.leave()
		c.books.waitNs += nanotime() - tw
		if err != nil {
			return err
		}
	}
	fl := learn.FoldLen(x.n)
	acc := x.acc[:fl]
	copy(acc, x.all[:fl])
	for j := 1; j < c.nodes; j++ {
		if err := learn.Merge(acc, x.all[j*fl:(j+1)*fl]); err != nil {
			return err
		}
	}
	return c.writeVerdicts(acc)
}

// writeVerdicts turns the complete fold into the verdicts and writes
// them into the node's verdict area of this step.
func (c *Comm) writeVerdicts(fold []float64) error {
	tv := nanotime()
	defer func() { c.books.verdictNs += nanotime() - tv }()
	v, err := c.tuner.Verdicts(fold)
	if err != nil {
		return err
	}
	memmove(c.seg.verdictArea(c.xchg.gen%2), unsafe.Pointer(unsafe.SliceData(v)), 8*len(v))
	c.xchg.stage = 2
	return nil
}

// commitFold reads the step's verdicts from the node segment and commits
// them (every rank, at the same call).
func (c *Comm) commitFold() error {
	x := &c.xchg
	x.phase = 0
	tc := nanotime()
	v := unsafe.Slice((*float64)(c.seg.verdictArea(x.gen%2)), learn.VerdictLen(learn.FoldLen(x.n)))
	err := c.tuner.CommitVerdicts(v)
	c.books.commitNs += nanotime() - tc
	if err == nil {
		x.folds++
	}
	return err
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
	return fmt.Sprintf(" (the ranks' largest, recent commits); this rank over the run: %.2f us per recorded call (%d calls): %d commit steps %.2f, and %.2f more inside waits for peers still not ready (%d of %d parts run in waits; both: exchange %.2f, of it reading the stamps in %.2f, verdicts %.2f, MPI waits %.2f; commit %.2f), %d trips into Go %.2f",
		per(b.stepNs+b.tripNs), n, c.tuner.Commits(), per(b.stepNs), per(b.idleNs), b.idleRuns-b.idleLate, b.idleRuns, per(b.foldNs), per(b.touchNs), per(b.verdictNs), per(b.waitNs), per(b.commitNs), b.trips, per(b.tripNs))
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
	var used []learn.Info // keys this run called (a table's other entries are not news)
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
