package dpml

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// Comm is a communicator prepared for DPML allreduces: the node split, the
// leader communicators and the node's shared-memory segment, built once by
// New and reused by every call. A Comm is used by one goroutine at a time
// (the one that makes MPI calls) and by all ranks of its communicator in the
// same order of calls, like any MPI communicator.
type Comm struct {
	world *mpi.Comm // private duplicate of the user's communicator
	node  *mpi.Comm // ranks sharing this node's memory

	rank, size   int
	local, ppn   int // this rank on its node, and the node's size
	nodeIdx      int
	nodes        int // h
	minPPN       int // smallest ppn over nodes: bound of l
	pos          int // this rank's place in the leader order; leader j = pos j
	leaderComm   *mpi.Comm
	leaderOrder  []int // local ranks by leader position
	segBudget    int   // bytes per input slot
	streamBytes  int   // copy-out streams when bytes x ppn reach this (0: never)
	llcBytes     int   // last-level cache size (32 MiB when unknown)
	demote       bool  // DPML_DEMOTE: CLDEMOTE what this rank wrote for others
	seg          *nodeSegment
	abort        *atomic.Uint64
	places       []leaders.Place // by local rank: where each runs (trees are built from them)
	trees        [maxRadix + 1]*treeShape
	treeRadix    int // DPML_TREE_RADIX
	treeBytes    int // DPML_TREE_BYTES: the default plan's tree threshold
	transports   [numIntra]transport
	call         call   // the call in progress (transports' state)
	pids         []int  // by local rank
	cma          bool   // cross-memory attach works on every node
	oversub      bool   // this node has more ranks than CPUs (or its CPUs are unknown)
	scratch      []byte // a leader's private staging buffers for CMA reads
	gen          uint64 // segments completed on this communicator
	wait         shm.Waiter
	waitPoll     shm.Waiter // wait, progressing pending MPI requests while it waits
	env          Override   // forced by DPML_LEADERS / DPML_PIPELINE
	fixed        Override   // forced by SetOverride
	timing       bool
	times        PhaseTimes
	err          error // sticky: a failed call leaves the communicator unusable
	closed       bool
	scratchSrcs  []unsafe.Pointer
	pending      [2][]*mpi.Request
	reqPool      [2][]mpi.Request // the requests pending points into, reused
	pendingRange [2]flagPost
	verbose      int
	reported     map[int]string // DPML_VERBOSE: last plan printed per size class
	tuner        *costmodel.Tuner
	tuningFile   string
	last         Plan     // the plan of the last call
	check        bool     // DPML_CHECK: compare every call's arguments across ranks
	warnings     []string // what New clamped (printed on rank 0)
	off          *offload // in-network reduction offload (offload.go); nil: none
	offReason    string   // why off is nil
}

// flagPost remembers which out-flag to raise when a segment's pending
// inter-node requests complete.
type flagPost struct {
	valid bool
	gen   uint64
}

// PhaseTimes accumulates the time this rank spent in each phase since the
// last ResetPhaseTimes (only when phase timing is on: WithPhaseTiming).
// Waits for peers are counted apart from the phases' own work.
type PhaseTimes struct {
	Calls                          int
	CopyIn, Reduce, Inter, CopyOut time.Duration
	WaitIn, WaitOut, Native, Setup time.Duration
	Total                          time.Duration
}

// Option configures New.
type Option func(*options)

type options struct {
	segBudget int
	timeout   time.Duration
	timing    bool
	shmDir    string
}

// WithSegmentBytes sets the per-rank shared-memory slot size (the largest
// segment a call moves at once); it must be equal on all ranks.
func WithSegmentBytes(n int) Option { return func(o *options) { o.segBudget = n } }

// WithTimeout bounds every wait for a peer (negative: wait forever).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithPhaseTiming turns on the per-phase timers read by PhaseTimes.
func WithPhaseTiming(on bool) Option { return func(o *options) { o.timing = on } }

// ErrClosed is returned by calls on a closed Comm.
var ErrClosed = errors.New("dpml: communicator is closed")

const (
	pageBytes   = 4096 // data area alignment
	minSegBytes = 4096
)

// New builds a DPML communicator over c. It is collective over c: every rank
// must call it, and every rank gets the same error if any rank fails (so no
// rank is left waiting for the others). Settings come from the environment
// (config.Vars) and opts. Every rank takes every setup collective whatever
// its own settings say, then the ranks agree on the outcome: a bad setting
// on some ranks, or a setting that must be equal on all ranks but differs
// (config.Compared(config.AtNew)), is an error on every rank that names the
// variable and the values seen (it wraps ErrConfig or ErrMismatch).
func New(c *mpi.Comm, opts ...Option) (*Comm, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: New on a nil communicator", ErrSetup)
	}
	d := &Comm{}
	o, settings, cfgErr := d.readSettings(opts)

	var err error
	if d.world, err = c.Dup(); err != nil {
		return nil, errors.Join(fmt.Errorf("%w: duplicate communicator: %w", ErrSetup, err), cfgErr)
	}
	d.rank, d.size = d.world.Rank(), d.world.Size()
	// From here on every rank takes every collective step even after a
	// local failure, then all agree on the outcome: a rank that bailed out
	// early would leave the others blocked in the next collective.
	if err := Agree(d.world, cfgErr, settings); err != nil {
		d.release()
		return nil, err
	}
	if err := d.agree(d.setup(o)); err != nil {
		d.release()
		return nil, err
	}
	if d.env.Leaders > d.minPPN {
		d.warnf("%s=%d is more than the %d ranks of the smallest node: using %d leaders",
			config.Leaders, d.env.Leaders, d.minPPN, d.minPPN)
		d.env.Leaders = d.minPPN
	}
	if err := d.agree(d.setupOffload()); err != nil {
		d.release()
		return nil, err
	}
	// setupTuner takes the same collectives on every rank (its inputs are
	// agreed above), failed or not.
	if err := d.agree(d.setupTuner()); err != nil {
		d.release()
		return nil, err
	}
	if d.verbose > 0 && d.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: %d ranks on %d node(s), ppn %d..%d, leader order %v, cross-memory attach %v\n%s",
			d.size, d.nodes, d.minPPN, d.ppn, d.leaderOrder, d.cma, config.Effective())
	}
	return d, nil
}

// readSettings parses every setting New uses, collecting all errors
// instead of stopping at the first: the ranks must still take the setup
// collectives together. It returns the settings compared across ranks.
func (d *Comm) readSettings(opts []Option) (options, []Setting, error) {
	var errs []error
	seen := map[string]bool{}
	keep := func(err error) {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	settings, err := SettingsOf(config.AtNew)
	keep(err)

	var o options
	b, segErr := config.Bytes(config.SegmentBytes)
	keep(segErr)
	o.segBudget = int(b)
	o.timeout, err = config.Duration(config.Timeout)
	keep(err)
	o.shmDir, err = config.Get(config.ShmDir)
	keep(err)
	for _, f := range opts {
		f(&o)
	}
	if (segErr == nil || o.segBudget != int(b)) && (o.segBudget < config.MinSegmentBytes || o.segBudget > config.MaxSegmentBytes) {
		keep(fmt.Errorf("%w: segment bytes %d (%s or WithSegmentBytes): out of range [%s, %s]", ErrConfig, o.segBudget,
			config.SegmentBytes, config.FormatBytes(config.MinSegmentBytes), config.FormatBytes(config.MaxSegmentBytes)))
	}
	o.segBudget = max(minSegBytes, o.segBudget/alignBytes*alignBytes)
	// The slot size in effect, options included, must agree too.
	settings = append(settings, Setting{Name: "segment bytes in effect (" + config.SegmentBytes + " or WithSegmentBytes)", Value: strconv.Itoa(o.segBudget)})

	d.segBudget, d.timing = o.segBudget, o.timing
	d.transports = [numIntra]transport{IntraShm: shmCopies{}, IntraCMA: cmaAttach{}, IntraTree: treeReduce{}}
	d.wait = shm.Waiter{Timeout: o.timeout, Pace: mpi.Pace}
	d.wait.Spin, err = config.Int(config.Spin)
	keep(err)
	d.env.Leaders, err = config.IntOrAuto(config.Leaders)
	keep(err)
	d.env.Pipeline, err = config.IntOrAuto(config.Pipeline)
	keep(err)
	d.env.Intra, err = parseIntra()
	keep(err)
	d.demote, err = config.Bool(config.Demote)
	keep(err)
	d.check, err = config.Bool(config.Check)
	keep(err)
	d.treeRadix, err = config.Int(config.TreeRadix)
	keep(err)
	if err == nil && (d.treeRadix < 1 || d.treeRadix > maxRadix) {
		keep(fmt.Errorf("%w: %s=%d: want 1..%d", ErrConfig, config.TreeRadix, d.treeRadix, maxRadix))
	}
	tb, err := config.Bytes(config.TreeBytes)
	keep(err)
	d.treeBytes = int(min(tb, int64(d.segBudget)))
	d.llcBytes = 32 << 20
	if llc, err := leaders.LLCBytes(); err == nil && llc > 0 {
		d.llcBytes = llc
	}
	d.streamBytes, err = parseStream(d.llcBytes)
	keep(err)
	// A bad DPML_VERBOSE is an error like any other (it used to be
	// dropped silently).
	d.verbose, err = config.Int(config.Verbose)
	keep(err)
	_, err = config.Enum(config.Tuner)
	keep(err)
	_, err = config.Enum(config.NodeSplit)
	keep(err)
	return o, settings, errors.Join(errs...)
}

// warnf prints a warning on rank 0 (stderr) and keeps it for tests.
func (d *Comm) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.warnings = append(d.warnings, msg)
	if d.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: warning: %s\n", msg)
	}
}

// parseStream reads DPML_STREAM_BYTES: the node-wide receive bytes from
// which copy-out streams (0: never); auto is the last-level cache size.
func parseStream(llc int) (int, error) {
	n, kw, err := config.BytesOr(config.StreamBytes)
	switch {
	case err != nil:
		return 0, err
	case kw == "off":
		return 0, nil
	case kw == "auto":
		return llc, nil
	case n > math.MaxInt:
		return math.MaxInt, nil
	}
	return int(n), nil
}

func parseIntra() (Intra, error) {
	v, err := config.Enum(config.Intra)
	if err != nil {
		return 0, err
	}
	in, err := ParseIntra(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%s: want auto, shm, cma or tree", ErrConfig, config.Intra, v)
	}
	return in, nil
}

// SplitNode splits c into one communicator per node, the way DPML_NODE_SPLIT
// says (shared: MPI_Comm_split_type SHARED; host: by processor name), ranks
// in c's order. It is collective over c.
func SplitNode(c *mpi.Comm) (*mpi.Comm, error) {
	how, err := config.Enum(config.NodeSplit)
	if err != nil {
		return nil, err
	}
	if how == "host" {
		return c.SplitByHost(c.Rank())
	}
	return c.SplitShared(c.Rank())
}

// agree turns a local error into a job-wide one: the call fails on every
// rank, with the same message, if it failed on any.
func (d *Comm) agree(local error) error {
	return Agree(d.world, local, nil)
}

// setup performs the collective construction. It runs every collective step
// on every rank and records the first local error.
func (d *Comm) setup(o options) error {
	var err error
	if d.node, err = SplitNode(d.world); err != nil {
		return fmt.Errorf("node split: %w", err)
	}
	d.local, d.ppn = d.node.Rank(), d.node.Size()

	// Node index and node count: number the node heads.
	color := mpi.Undefined
	if d.local == 0 {
		color = 0
	}
	heads, err := d.world.Split(color, d.rank)
	if err != nil {
		return fmt.Errorf("node heads split: %w", err)
	}
	info := []int64{0, 0}
	if heads != nil {
		info[0], info[1] = int64(heads.Rank()), int64(heads.Size())
		if err := heads.Free(); err != nil {
			return err
		}
	}
	if err := mpi.Bcast(d.node, info, 0); err != nil {
		return fmt.Errorf("broadcast node index: %w", err)
	}
	d.nodeIdx, d.nodes = int(info[0]), int(info[1])
	mm := []int64{int64(d.ppn)}
	if err := mpi.AllreduceInPlace(d.world, mm, mpi.OpMin); err != nil {
		return fmt.Errorf("smallest ppn: %w", err)
	}
	d.minPPN = int(mm[0])

	if err := d.chooseLeaders(); err != nil {
		return err
	}
	if d.cma, err = d.cmaProbe(); err != nil {
		return err
	}

	return d.mapSegment(o)
}

// chooseLeaders orders the local ranks so that every prefix is a good leader
// set (leaders.Order) and joins leader communicator pos: one split serves
// every leader count l, because leader j is always the rank at position j.
func (d *Comm) chooseLeaders() error {
	me, lerr := leaders.Local()
	enc := me.Encode()
	all := make([]int64, len(enc)*d.ppn)
	if err := mpi.Allgather(d.node, enc[:], all); err != nil {
		return fmt.Errorf("gather placement: %w", err)
	}
	places, err := leaders.DecodePlaces(all)
	if err != nil {
		return fmt.Errorf("decode placement: %w", err)
	}
	d.places = places
	d.leaderOrder = leaders.Order(places)
	d.oversub = oversubscribed(places)
	d.wait.NoSleep = !d.oversub

	d.pos = -1
	for p, r := range d.leaderOrder {
		if r == d.local {
			d.pos = p
		}
	}
	color := mpi.Undefined
	if d.pos >= 0 && d.pos < d.minPPN {
		color = d.pos
	}
	if d.leaderComm, err = d.world.Split(color, d.nodeIdx); err != nil {
		return fmt.Errorf("leader split: %w", err)
	}
	if lerr != nil && d.verbose > 0 && d.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: placement unknown (%v); leaders spread by local rank\n", lerr)
	}
	if d.pos < 0 {
		return errors.New("leader order misses this rank")
	}
	return nil
}

// oversubscribed reports whether the ranks of a node share CPUs: more
// ranks than the CPUs they may run on together, or a rank whose CPUs are
// unknown. Waits then back off to sleeping, so that the rank that will set
// a flag can get the core; ranks that own their cores only spin and yield.
func oversubscribed(places []leaders.Place) bool {
	cpus := map[int]bool{}
	for _, p := range places {
		if len(p.CPUs) == 0 {
			return true
		}
		for _, c := range p.CPUs {
			cpus[c] = true
		}
	}
	return len(cpus) < len(places)
}

func (d *Comm) mapSegment(o options) error {
	size, _ := segmentLayout(d.ppn, d.segBudget)
	store := shm.Store{Dir: o.shmDir}
	// The node head creates the segment and broadcasts its name; a
	// zero-length name tells the others creation failed.
	var name []uint8
	var cerr error
	var mem *shm.Segment
	if d.local == 0 {
		job, _ := config.Get(config.Job)
		var nm string
		if nm, cerr = shm.Name("dpml-" + job); cerr == nil {
			mem, cerr = store.Create(nm, size)
		}
		if cerr == nil {
			name = []uint8(nm)
		}
	}
	n := []int32{int32(len(name))}
	if err := mpi.Bcast(d.node, n, 0); err != nil {
		return fmt.Errorf("broadcast segment name: %w", err)
	}
	if n[0] == 0 {
		if cerr != nil {
			return fmt.Errorf("create node segment of %d bytes: %w", size, cerr)
		}
		return errors.New("the node head could not create the shared-memory segment")
	}
	if d.local != 0 {
		name = make([]uint8, n[0])
	}
	if err := mpi.Bcast(d.node, name, 0); err != nil {
		return fmt.Errorf("broadcast segment name: %w", err)
	}
	var oerr error
	if d.local != 0 {
		mem, oerr = store.Open(string(name), size)
	}
	// Everyone has mapped it (or failed): the name can go, so that no
	// crash from here on can leave the segment behind.
	if err := d.node.Barrier(); err != nil {
		return fmt.Errorf("segment barrier: %w", err)
	}
	if d.local == 0 && mem != nil {
		if err := mem.Unlink(); err != nil && oerr == nil {
			oerr = err
		}
	}
	if oerr != nil {
		if mem != nil {
			oerr = errors.Join(oerr, mem.Close())
		}
		return fmt.Errorf("map node segment %s: %w", name, oerr)
	}
	var err error
	if d.seg, err = viewSegment(mem, d.ppn, d.segBudget); err != nil {
		return errors.Join(err, mem.Close())
	}
	d.abort = d.seg.abort
	d.wait.Abort = d.abort
	d.waitPoll = d.wait
	d.waitPoll.Poll = d.progress // bound once: a method value per call would allocate
	d.scratchSrcs = make([]unsafe.Pointer, d.ppn)
	return nil
}

// Nodes, PPN, MaxLeaders and the other accessors describe the layout.
func (d *Comm) Nodes() int { return d.nodes }

// PPN is the number of ranks on this rank's node.
func (d *Comm) PPN() int { return d.ppn }

// MinPPN is the smallest number of ranks on any node.
func (d *Comm) MinPPN() int { return d.minPPN }

// MaxLeaders is the largest leader count a plan may use (the smallest ppn).
func (d *Comm) MaxLeaders() int { return d.minPPN }

// Rank and Size are those of the underlying communicator.
func (d *Comm) Rank() int { return d.rank }

// Size is the number of ranks.
func (d *Comm) Size() int { return d.size }

// NodeRank is this rank's index on its node.
func (d *Comm) NodeRank() int { return d.local }

// NodeIndex is this rank's node number, 0..Nodes()-1.
func (d *Comm) NodeIndex() int { return d.nodeIdx }

// LeaderOrder returns the local ranks in leader order: with l leaders, the
// leaders are the first l entries.
func (d *Comm) LeaderOrder() []int { return append([]int(nil), d.leaderOrder...) }

// CMA reports whether plans may move intra-node data with cross-memory
// attach (process_vm_readv/writev) on this communicator.
func (d *Comm) CMA() bool { return d.cma }

// SegmentBytes is the per-rank slot size of the node segment.
func (d *Comm) SegmentBytes() int { return d.segBudget }

// SetOverride forces parts of the plan of every later call on this
// communicator (fields a call's own Override leaves zero). Like a per-call
// Override it must be the same on all ranks; the zero Override restores the
// engine's choice.
func (d *Comm) SetOverride(o Override) { d.fixed = o }

// PhaseTimes returns the accumulated phase times of this rank.
func (d *Comm) PhaseTimes() PhaseTimes { return d.times }

// ResetPhaseTimes zeroes the phase timers.
func (d *Comm) ResetPhaseTimes() { d.times = PhaseTimes{} }

// SetPhaseTiming turns the phase timers on or off (a local setting).
func (d *Comm) SetPhaseTiming(on bool) { d.timing = on }

// Close releases the communicators and the shared segment. It is collective
// (it frees MPI communicators). Closing twice is a no-op.
func (d *Comm) Close() error {
	if d == nil || d.closed {
		return nil
	}
	return errors.Join(d.saveTuning(), d.release())
}

// LastPlan is the plan the last call on this communicator ran.
func (d *Comm) LastPlan() Plan { return d.last }

// Tuner exposes the communicator's tuner (nil with DPML_TUNER=static), for
// tools that report or save what it learned.
func (d *Comm) Tuner() *costmodel.Tuner { return d.tuner }

func (d *Comm) release() error {
	d.closed = true
	errs := []error{d.closeOffload()} // before the leader communicators go
	for i := range d.pending {
		for _, r := range d.pending[i] {
			// After a failed call a peer may be gone and its requests may
			// never complete: do not wait for them (MPI cannot cancel a
			// collective; the job is ending anyway).
			if r != nil && d.err == nil {
				errs = append(errs, r.Wait())
			}
		}
		d.pending[i] = nil
	}
	if d.seg != nil {
		errs = append(errs, d.seg.mem.Close())
		d.seg = nil
	}
	for _, c := range []**mpi.Comm{&d.leaderComm, &d.node, &d.world} {
		if *c != nil {
			errs = append(errs, (*c).Free())
			*c = nil
		}
	}
	return errors.Join(errs...)
}
