package dpml

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/dpml/internal/fused"
	"github.com/dpmlgo/dpml/internal/runtime/dropinhook"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
	"github.com/dpmlgo/dpml/shm"
)

// Comm is a communicator prepared for DPML allreduces: the node split, the
// leader communicators and the node's shared-memory segment, built once by
// New and reused by every call. A Comm is used by one goroutine at a time
// (the one that makes MPI calls) and by all ranks of its communicator in the
// same order of calls, like any MPI communicator.
//
// Its state comes in four parts with different lifetimes: the topology
// (fixed at New: who is where, the leader order, the communicators), the
// node segment (its typed view and the transports that move data through
// it), the policy (settings and the tuner: what plan a call gets), and the
// in-flight state (the call in progress, pending requests, generation,
// errors, diagnostics).
type Comm struct {
	laps laps // setup steps' times (DPML_VERBOSE)
	// parent is the program's communicator New duplicated: the
	// watchdog's abort target during setup, before world exists.
	parent *mpi.Comm
	// later is the setup still to come of a communicator New made with
	// Deferred (nil once set up, or for an ordinary New).
	later *deferredSetup
	topology
	nodeView
	policy
	inFlight
}

// topology is where the ranks are, fixed at New.
type topology struct {
	world *mpi.Comm // private duplicate of the user's communicator
	node  *mpi.Comm // ranks sharing this node's memory

	rank, size  int
	local, ppn  int // this rank on its node, and the node's size
	nodeIdx     int
	nodes       int // h
	minPPN      int // smallest ppn over nodes: bound of l
	pos         int // this rank's place in the leader order; leader j = pos j
	leaderComm  *mpi.Comm
	leaderOrder []int           // local ranks by leader position
	places      []leaders.Place // by local rank: where each runs (trees are built from them)
	pids        []int           // by local rank
	cma         bool            // cross-memory attach works on every node
	oversub     bool            // this node has more ranks than CPUs (or its CPUs are unknown)
	llcBytes    int             // last-level cache size (32 MiB when unknown)
}

// nodeView is this rank's view of the node segment and the transports that
// move data through it.
type nodeView struct {
	seg        *nodeSegment
	segToken   uint64 // the segment's pool token (segpool.go)
	abort      *atomic.Uint64
	segBudget  int                                     // bytes per input slot
	trees      [maxRadix + 1][plan.MaxTrees]*treeShape // [radix][tree j], built on first use
	transports [numIntra]transport
	inters     [plan.NumInter]interAlgo // the inter-node algorithms (inter.go), by plan.Inter
	wait       shm.Waiter
	waitPoll   shm.Waiter // wait, progressing pending MPI requests while it waits
	// ct is the tree's C state over the segment (tree.go: the C code
	// folds every tree plan); treeRes the places of the tree's result
	// (dpml_tree_result): buffer sets 0 and 1, then inline.
	ct      *fused.State
	treeRes [3]unsafe.Pointer
	fz      fusedView // the fused tree call's state (fused.go)
}

// policy is what decides a call's plan: the settings and the tuner.
type policy struct {
	streamBytes int      // copy-out streams when bytes x ppn reach this (0: never)
	demote      bool     // DPML_DEMOTE: CLDEMOTE what this rank wrote for others
	treeRadix   int      // DPML_TREE_RADIX
	treeBytes   int      // DPML_TREE_BYTES: the default plan's tree threshold
	env         Override // forced by DPML_LEADERS / DPML_PIPELINE
	fixed       Override // forced by SetOverride
	check       bool     // DPML_CHECK: compare every call's arguments across ranks
	fused       bool     // DPML_FUSED: small tree calls run in C (fused.go)
	verbose     int
	tuner       *learn.Tuner
	clockOffset int64 // ns: this host's CLOCK_MONOTONIC minus rank 0's (clock.go)
	tuningFile  string
	// The machine profile (profile.go): DPML_PROFILE, and on rank 0 the
	// file Close saves to and its key.
	profileMode, profile, profileKeyText string
	warnings                             []string // what New clamped (printed on rank 0)
	off                                  *offload // in-network reduction offload (offload.go); nil: none
	offReason                            string   // why off is nil
}

// inFlight is the state of calls: the one in progress, what later calls
// depend on, and what the last one did.
type inFlight struct {
	call         call   // the call in progress (transports' state)
	gen          uint64 // segments completed on this communicator
	scratch      []byte // a leader's private staging buffers for CMA reads
	scratchSrcs  []unsafe.Pointer
	pending      [2][]pendingStep // started inter-node steps, by buffer set
	pendingRange [2]flagPost
	err          error // sticky: a failed call leaves the communicator unusable
	closed       bool
	memo         planMemo // the last call's plan (planFor, LastPlan)
	keyMemo      keyMemo  // the last tuned call's key and learner state (keyState)
	// tunOvh: what the tuner cost this rank since its last commit, in
	// ns (that commit's collectives, and the trips into Go that timed
	// calls of C callers made for plans the C layer runs itself); the
	// tuner bounds a settled key's sampling by it (NoteOverhead,
	// learn.Config.SampleShare).
	tunOvh    int64
	books     tunerBooks    // the same over the communicator's life, by part (DPML_VERBOSE)
	xchg      exchangeState // the tuner's commit step in flight (tune.go)
	lastKey   costmodel.Key // the tuning key of the last call, when lastTuned
	lastTuned bool
	timing    bool
	times     PhaseTimes
	reported  map[reportKey]bool // DPML_VERBOSE: plans printed, per size class
	// watch marks the blocking MPI step in progress for the watchdog
	// (watchdog.go), which aborts the job when one outlasts watchTimeout.
	watch        watch
	watchTimeout time.Duration
	trc          tracer // dpmltrace builds only (trace.go)
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
	deferred  bool
}

// WithSegmentBytes sets the per-rank shared-memory slot size (the largest
// segment a call moves at once); it must be equal on all ranks.
func WithSegmentBytes(n int) Option { return func(o *options) { o.segBudget = n } }

// WithTimeout bounds every wait for a peer (negative: wait forever).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// minTimeout is the shortest positive timeout New accepts: a shorter bound
// fails calls whose peer merely lost its core for one scheduler time slice
// (milliseconds), so on a shared machine nearly every call would fail.
const minTimeout = time.Millisecond

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
		return nil, nilCommError("New")
	}
	var probe options
	for _, f := range opts {
		f(&probe)
	}
	if probe.deferred {
		return newDeferred(c, opts)
	}
	d := &Comm{parent: c}
	if err := d.build(c, opts); err != nil {
		return nil, err
	}
	return d, nil
}

// build is New's setup of d over c (collective over c); on failure d is
// released and the error is the same on every rank.
func (d *Comm) build(c *mpi.Comm, opts []Option) error {
	d.laps.start()
	o, settings, cfgErr := d.readSettings(opts)
	d.startWatch() // every collective below is bounded by DPML_TIMEOUT
	d.watch.enter(stepSetup)

	var err error
	if d.world, err = c.Dup(); err != nil {
		d.stopWatch()
		return errors.Join(fmt.Errorf("%w: duplicate communicator: %w", ErrSetup, err), cfgErr)
	}
	d.rank, d.size = d.world.Rank(), d.world.Size()
	// From here on every rank takes every collective step even after a
	// local failure, then all agree on the outcome: a rank that bailed out
	// early would leave the others blocked in the next collective.
	d.laps.lap("dup")
	if err := agree(d.world, cfgErr, settings); err != nil { // inside the watched setup step
		d.release()
		return err
	}
	d.laps.lap("settings agreed")
	if err := d.agree(d.setup(o)); err != nil {
		d.release()
		return err
	}
	if d.env.Leaders > d.minPPN {
		d.warnf("%s=%d is more than the %d ranks of the smallest node: using %d leaders",
			config.Leaders, d.env.Leaders, d.minPPN, d.minPPN)
		d.env.Leaders = d.minPPN
	}
	if err := d.agree(d.setupOffload()); err != nil {
		d.release()
		return err
	}
	d.laps.lap("offload")
	// setupTuner takes the same collectives on every rank (its inputs are
	// agreed above), failed or not.
	if err := d.agree(d.setupTuner()); err != nil {
		d.release()
		return err
	}
	d.watch.leave()
	d.laps.lap("tuner")
	if d.rank == 0 {
		warnUnknownOnce.Do(func() {
			// A misspelt setting is otherwise ignored without a word.
			for _, u := range config.Unknown(os.Environ()) {
				fmt.Fprintf(os.Stderr, "dpml: warning: %v\n", u)
			}
		})
	}
	if d.verbose > 0 && d.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: %d ranks on %d node(s), ppn %d..%d, leader order %v, cross-memory attach %v; settings changed from the defaults: %s\n",
			d.size, d.nodes, d.minPPN, d.ppn, d.leaderOrder, d.cma, config.Changed())
		if d.verbose >= 2 {
			fmt.Fprint(os.Stderr, config.Effective())
		}
		fmt.Fprintf(os.Stderr, "dpml: set up in %s\n", d.laps.String())
	}
	return nil
}

// readSettings parses every setting New uses, collecting all errors
// instead of stopping at the first: the ranks must still take the setup
// collectives together. It returns the settings compared across ranks.
func (c *Comm) readSettings(opts []Option) (options, []Setting, error) {
	var errs []error
	seen := map[string]bool{}
	keep := func(err error) {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	settings, err := settingsOf(config.AtNew)
	keep(err)
	// DPML_GOSCHED, once per process, before the engine's first MPI call
	// (package internal/runtime/gosched).
	keep(gosched.Apply())

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
	if o.timeout > 0 && o.timeout < minTimeout {
		keep(fmt.Errorf("%w: timeout %v (%s or WithTimeout): below the %v minimum (negative: wait forever; 0: the default)",
			ErrConfig, o.timeout, config.Timeout, minTimeout))
	}
	if (segErr == nil || o.segBudget != int(b)) && (o.segBudget < config.MinSegmentBytes || o.segBudget > config.MaxSegmentBytes) {
		keep(fmt.Errorf("%w: segment bytes %d (%s or WithSegmentBytes): out of range [%s, %s]", ErrConfig, o.segBudget,
			config.SegmentBytes, config.FormatBytes(config.MinSegmentBytes), config.FormatBytes(config.MaxSegmentBytes)))
	}
	o.segBudget = max(minSegBytes, o.segBudget/alignBytes*alignBytes)
	// The slot size in effect, options included, must agree too.
	settings = append(settings, Setting{Name: "segment bytes in effect (" + config.SegmentBytes + " or WithSegmentBytes)", Value: strconv.Itoa(o.segBudget)})

	c.segBudget, c.timing = o.segBudget, o.timing
	c.transports = [numIntra]transport{IntraShm: shmCopies{}, IntraCMA: cmaAttach{}, IntraTree: treeReduce{}}
	c.inters = newInterAlgos()
	c.wait = shm.Waiter{Timeout: o.timeout, Pace: gosched.Pace}
	c.wait.Spin, err = config.Int(config.Spin)
	keep(err)
	c.env.Leaders, err = config.IntOrAuto(config.Leaders)
	keep(err)
	c.env.Pipeline, err = config.IntOrAuto(config.Pipeline)
	keep(err)
	c.env.Intra, err = parseIntra()
	keep(err)
	c.demote, err = config.Bool(config.Demote)
	keep(err)
	c.check, err = config.Bool(config.Check)
	keep(err)
	c.fused, err = config.Bool(config.Fused)
	keep(err)
	c.treeRadix, err = config.Int(config.TreeRadix)
	keep(err)
	if err == nil && (c.treeRadix < 1 || c.treeRadix > maxRadix) {
		keep(fmt.Errorf("%w: %s=%d: want 1..%d", ErrConfig, config.TreeRadix, c.treeRadix, maxRadix))
	}
	tb, err := config.Bytes(config.TreeBytes)
	keep(err)
	c.treeBytes = int(min(tb, int64(c.segBudget)))
	c.llcBytes = 32 << 20
	if llc, err := llcBytes(); err == nil && llc > 0 {
		c.llcBytes = llc
	}
	c.streamBytes, err = parseStream(c.llcBytes)
	keep(err)
	// A bad DPML_VERBOSE is an error like any other (it used to be
	// dropped silently).
	c.verbose, err = config.Int(config.Verbose)
	keep(err)
	_, err = config.Enum(config.Tuner)
	keep(err)
	_, err = config.Enum(config.NodeSplit)
	keep(err)
	return o, settings, errors.Join(errs...)
}

// warnf prints a warning on rank 0 (stderr) and keeps it for tests.
func (c *Comm) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.warnings = append(c.warnings, msg)
	if c.rank == 0 {
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
func (c *Comm) agree(local error) error {
	return agree(c.world, local, nil)
}

// setup performs the collective construction. It runs every collective step
// on every rank and records the first local error.
func (c *Comm) setup(o options) error {
	var err error
	if c.node, err = SplitNode(c.world); err != nil {
		return fmt.Errorf("node split: %w", err)
	}
	c.laps.lap("node split")
	c.local, c.ppn = c.node.Rank(), c.node.Size()

	// Node index and node count: number the node heads.
	color := mpi.Undefined
	if c.local == 0 {
		color = 0
	}
	heads, err := c.world.Split(color, c.rank)
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
	if err := mpi.Bcast(c.node, info, 0); err != nil {
		return fmt.Errorf("broadcast node index: %w", err)
	}
	c.nodeIdx, c.nodes = int(info[0]), int(info[1])
	mm := []int64{int64(c.ppn)}
	if err := mpi.AllreduceInPlace(c.world, mm, mpi.OpMin); err != nil {
		return fmt.Errorf("smallest ppn: %w", err)
	}
	c.minPPN = int(mm[0])
	c.laps.lap("node index")

	if err := c.chooseLeaders(); err != nil {
		return err
	}
	c.laps.lap("leaders")
	if c.cma, err = c.cmaProbe(); err != nil {
		return err
	}
	c.laps.lap("cross-memory probe")
	defer c.laps.lap("segment")

	return c.mapSegment(o)
}

// chooseLeaders orders the local ranks so that every prefix is a good leader
// set (leaders.Order) and joins leader communicator pos: one split serves
// every leader count l, because leader j is always the rank at position j.
func (c *Comm) chooseLeaders() error {
	me, lerr := leaders.Local()
	enc := me.Encode()
	all := make([]int64, len(enc)*c.ppn)
	if err := mpi.Allgather(c.node, enc[:], all); err != nil {
		return fmt.Errorf("gather placement: %w", err)
	}
	places, err := leaders.DecodePlaces(all)
	if err != nil {
		return fmt.Errorf("decode placement: %w", err)
	}
	c.places = places
	c.leaderOrder = leaders.Order(places)
	c.oversub = oversubscribed(places)
	c.wait.NoSleep = !c.oversub
	c.wait.Spin = waitSpin(c.wait.Spin, config.IsSet(config.Spin), c.oversub, c.nodes, dropinhook.OwnCoreSpin)

	c.pos = -1
	for p, r := range c.leaderOrder {
		if r == c.local {
			c.pos = p
		}
	}
	color := mpi.Undefined
	if c.pos >= 0 && c.pos < c.minPPN {
		color = c.pos
	}
	if c.leaderComm, err = c.world.Split(color, c.nodeIdx); err != nil {
		return fmt.Errorf("leader split: %w", err)
	}
	if lerr != nil && c.verbose > 0 && c.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: placement unknown (%v); leaders spread by local rank\n", lerr)
	}
	if c.pos < 0 {
		return errors.New("leader order misses this rank")
	}
	return nil
}

// waitSpin is the polls of a flag a wait makes before it yields: DPML_SPIN's
// value spin, or own (dropinhook.OwnCoreSpin, when the drop-in set it)
// where the setting is unset, the node's ranks own their cores and the
// communicator has one node: there a wait has no MPI request to progress,
// while on several nodes a leader's spin phase calls no Poll.
func waitSpin(spin int, set, oversub bool, nodes, own int) int {
	if own > 0 && !set && !oversub && nodes == 1 {
		return own
	}
	return spin
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

func (c *Comm) mapSegment(o options) error {
	size, dataOff := segmentLayout(c.ppn, c.segBudget)
	mem, token, reused, err := c.reuseSegment(size, dataOff) // segpool.go
	if err != nil {
		return err
	}
	if !reused {
		if mem, token, err = c.newSegment(o, size); err != nil {
			return err
		}
	}
	c.segToken = token
	if c.seg, err = viewSegment(mem, c.ppn, c.segBudget); err != nil {
		return errors.Join(err, mem.Close())
	}
	c.abort = c.seg.abort
	c.wait.Abort = c.abort
	c.wait.Idle = (*tunerIdle)(c) // the learner's work due in a call runs while it waits (tune.go)
	c.waitPoll = c.wait
	c.waitPoll.Poll = c.progress // bound once: a method value per call would allocate
	c.scratchSrcs = make([]unsafe.Pointer, c.ppn)
	if err := c.setupTree(c.fused); err != nil {
		c.seg = nil
		return errors.Join(err, mem.Close())
	}
	return nil
}

// newSegment creates the node segment and maps it on every local rank
// (collective over c.node), with its pool token.
func (c *Comm) newSegment(o options, size int) (*shm.Segment, uint64, error) {
	// Sparse: the segment's pages are allocated where plans first touch
	// them, not zeroed inside every rank's setup (the file system's room
	// is checked at once).
	store := shm.Store{Dir: o.shmDir, Sparse: true}
	// The segment never has a name where the file system allows: the node
	// head creates it unnamed and the others open it through the head's
	// descriptor, so no crash at any step of setup can leave it behind.
	// Where a rank cannot open it that way (no O_TMPFILE, a /proc that
	// hides the head), the node falls back to a named segment, unlinked
	// as soon as every local rank has mapped it.
	mem, token, retry, err := c.shareSegment(store, size, false)
	if retry {
		mem, token, _, err = c.shareSegment(store, size, true)
	}
	return mem, token, err
}

// testHookSegmentCreated, when set by a test, runs on a node head right
// after it created the node segment, before the other local ranks map it.
var testHookSegmentCreated func(c *Comm)

// shareSegment creates the node segment on the node head (unnamed unless
// named is set or the directory cannot hold an unnamed file) and maps it
// on every local rank (collective over c.node). retry reports that an
// unnamed segment could not be opened by some local rank: everything is
// undone, and the caller tries again with named set.
func (c *Comm) shareSegment(store shm.Store, size int, named bool) (mem *shm.Segment, token uint64, retry bool, err error) {
	// The node head creates the segment and broadcasts its reference; a
	// zero-length reference tells the others creation failed.
	var name []uint8
	var cerr error
	if c.local == 0 {
		if !named {
			mem, cerr = store.CreateUnnamed(size)
		}
		if named || errors.Is(cerr, shm.ErrUnnamedUnsupported) {
			job, _ := config.Get(config.Job)
			var nm string
			if nm, cerr = shm.Name("dpml-" + job); cerr == nil {
				mem, cerr = store.Create(nm, size)
			}
		}
		if cerr == nil {
			name = []uint8(mem.Ref())
			if testHookSegmentCreated != nil {
				testHookSegmentCreated(c)
			}
		}
	}
	n := []int32{int32(len(name))}
	if err := mpi.Bcast(c.node, n, 0); err != nil {
		return nil, 0, false, fmt.Errorf("broadcast segment name: %w", err)
	}
	if n[0] == 0 {
		if cerr != nil {
			return nil, 0, false, fmt.Errorf("create node segment of %d bytes: %w", size, cerr)
		}
		return nil, 0, false, errors.New("the node head could not create the shared-memory segment")
	}
	if c.local != 0 {
		name = make([]uint8, n[0])
	}
	if err := mpi.Bcast(c.node, name, 0); err != nil {
		return nil, 0, false, fmt.Errorf("broadcast segment name: %w", err)
	}
	var oerr error
	if c.local != 0 {
		if shm.IsRef(string(name)) {
			mem, oerr = store.OpenRef(string(name), size)
		} else {
			mem, oerr = store.Open(string(name), size)
		}
	}
	// Everyone has mapped it (or failed): the name (or the head's
	// descriptor) can go, so that no crash from here on can leave the
	// segment behind. The same step tells whether an unnamed segment
	// failed to open somewhere, and gives every rank the head's pool
	// token for the segment (segpool.go).
	failed := []int64{0, 0}
	if oerr != nil && shm.IsRef(string(name)) {
		failed[0] = 1
	}
	if c.local == 0 {
		failed[1] = int64(newSegToken())
	}
	if err := mpi.AllreduceInPlace(c.node, failed, mpi.OpMax); err != nil {
		return nil, 0, false, fmt.Errorf("segment barrier: %w", err)
	}
	if c.local == 0 && mem != nil {
		if err := mem.Unlink(); err != nil && oerr == nil {
			oerr = err
		}
	}
	if failed[0] != 0 {
		if mem != nil {
			mem.Close()
		}
		return nil, 0, true, nil
	}
	if oerr != nil {
		if mem != nil {
			oerr = errors.Join(oerr, mem.Close())
		}
		return nil, 0, false, fmt.Errorf("map node segment %s: %w", name, oerr)
	}
	return mem, uint64(failed[1]), false, nil
}

// Nodes, PPN, MaxLeaders and the other accessors describe the layout.
func (c *Comm) Nodes() int { return c.nodes }

// PPN is the number of ranks on this rank's node.
func (c *Comm) PPN() int { return c.ppn }

// MinPPN is the smallest number of ranks on any node.
func (c *Comm) MinPPN() int { return c.minPPN }

// MaxLeaders is the largest leader count a plan may use (the smallest ppn).
func (c *Comm) MaxLeaders() int { return c.minPPN }

// Rank and Size are those of the underlying communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// NodeRank is this rank's index on its node.
func (c *Comm) NodeRank() int { return c.local }

// NodeIndex is this rank's node number, 0..Nodes()-1.
func (c *Comm) NodeIndex() int { return c.nodeIdx }

// LeaderOrder returns the local ranks in leader order: with l leaders, the
// leaders are the first l entries.
func (c *Comm) LeaderOrder() []int { return append([]int(nil), c.leaderOrder...) }

// CMA reports whether plans may move intra-node data with cross-memory
// attach (process_vm_readv/writev) on this communicator.
func (c *Comm) CMA() bool { return c.cma }

// SegmentBytes is the per-rank slot size of the node segment.
func (c *Comm) SegmentBytes() int { return c.segBudget }

// SetOverride forces parts of the plan of every later call on this
// communicator (fields a call's own Override leaves zero). Like a per-call
// Override it must be the same on all ranks; the zero Override restores the
// engine's choice.
func (c *Comm) SetOverride(o Override) {
	if c.later != nil {
		c.later.override, c.later.overrideSet = o, true
		return
	}
	c.fixed, c.memo.valid = o, false
	if c.fz.f != nil {
		c.fz.f.Revoke() // libdpml.so's clearances were for the old plan
		c.fz.parked.drop = true
	}
}

// PhaseTimes returns the accumulated phase times of this rank.
func (c *Comm) PhaseTimes() PhaseTimes { return c.times }

// ResetPhaseTimes zeroes the phase timers.
func (c *Comm) ResetPhaseTimes() { c.times = PhaseTimes{} }

// SetPhaseTiming turns the phase timers on or off (a local setting).
func (c *Comm) SetPhaseTiming(on bool) { c.timing = on }

// Close releases the communicators and the shared segment. It is collective
// (it frees MPI communicators). Closing twice is a no-op.
func (c *Comm) Close() error {
	if c == nil || c.closed {
		return nil
	}
	if c.later != nil {
		// Deferred and never set up: nothing was built.
		c.closed, c.later = true, nil
		return nil
	}
	c.settleClear() // the learner counts the cleared calls (tables, the report)
	var terr error
	if c.fz.foreign && c.fz.f != nil && c.fz.f.Pending() && c.err == nil {
		// And the calls libdpml.so's C layer ran since the engine's
		// last call. Close is collective and every rank ran the same
		// calls, so a commit step this makes due runs on all ranks.
		terr = c.takeBack()
	}
	if c.xchg.phase != 0 && c.err == nil && terr == nil {
		// The learner's exchange in flight: every rank has started it,
		// and Close is collective.
		terr = c.advanceExchange(true)
	}
	if c.verbose > 0 && c.rank == 0 && c.tuner != nil {
		writeSizeSummary(os.Stderr, c.tuner.Infos())
		c.printTuner(os.Stderr, c.verbose >= 2)
	}
	c.saveProfile()
	return errors.Join(terr, c.saveTuning(), c.release())
}

// LastPlan is the plan the last call on this communicator ran.
func (c *Comm) LastPlan() Plan {
	if c.later != nil {
		return Plan{Shape: plan.Shape{Variant: Native}} // the MPI library ran it (Deferred)
	}
	if p, n := c.lastParked(); p != nil {
		// The C layer ran it under a parked clearance.
		o := Override{}
		if p.tuned {
			o = Override(p.arm)
		}
		if pl, err := c.plan(n, p.kind.Size(), o); err == nil {
			return pl
		}
	}
	return c.memo.pp.p
}

// LastTunerInfo is the tuner's state of the last call's key (its plan,
// state, switch and change counters, cost and skew); false when the tuner
// did not decide that call.
func (c *Comm) LastTunerInfo() (learn.Info, bool) {
	if c == nil || c.tuner == nil {
		return learn.Info{}, false
	}
	if p, _ := c.lastParked(); p != nil {
		if !p.tuned {
			return learn.Info{}, false
		}
		return c.tuner.Info(p.key)
	}
	if !c.lastTuned {
		return learn.Info{}, false
	}
	if !c.fz.clear.block {
		// The cleared calls counted. Not a confirmation block's: a rank
		// that asked would go on call by call and take the block's
		// commit step on another call than the ranks that did not.
		c.settleClear()
	}
	return c.tuner.Info(c.lastKey)
}

// Tuner exposes the communicator's tuner (nil with DPML_TUNER=static), for
// tools that report or save what it learned.
func (c *Comm) Tuner() *learn.Tuner { return c.tuner }

func (c *Comm) release() error {
	c.closed = true
	c.dumpTrace()
	c.stopWatch()
	errs := []error{c.closeOffload()} // before the leader communicators go
	for i := range c.pending {
		for _, r := range c.pending[i] {
			// After a failed call a peer may be gone and its requests may
			// never complete: do not wait for them (MPI cannot cancel a
			// collective; the job is ending anyway).
			if r != nil && c.err == nil {
				errs = append(errs, c.wait.Until(r.Test))
			}
		}
		c.pending[i] = nil
	}
	for _, a := range c.inters {
		if a != nil {
			errs = append(errs, a.close(c.err == nil))
		}
	}
	c.freeFused()
	if c.seg != nil {
		// A segment left clean (no failed call, no peer's abort) goes
		// to the pool for a later communicator of the same ranks.
		clean := c.err == nil && c.abort.Load() == 0
		if !clean || !poolPut(c.segToken, c.ppn, c.seg.mem.Size(), c.seg.mem) {
			errs = append(errs, c.seg.mem.Close())
		}
		c.seg = nil
	}
	for _, mc := range []**mpi.Comm{&c.leaderComm, &c.node, &c.world} {
		if *mc != nil {
			errs = append(errs, (*mc).Free())
			*mc = nil
		}
	}
	return errors.Join(errs...)
}

// laps times New's steps, for DPML_VERBOSE's account of what setup cost
// (rank 0's clock: every step ends in a collective, so the ranks'
// times differ little).
type laps struct {
	t0, last int64
	b        strings.Builder
}

func (l *laps) start() { l.t0 = nanotime(); l.last = l.t0 }

// lap ends the step named name.
func (l *laps) lap(name string) {
	now := nanotime()
	if l.b.Len() > 0 {
		l.b.WriteString(", ")
	}
	fmt.Fprintf(&l.b, "%s %.2f", name, float64(now-l.last)/1e6)
	l.last = now
}

// String is the total and the steps, in milliseconds.
func (l *laps) String() string {
	return fmt.Sprintf("%.2f ms (%s)", float64(l.last-l.t0)/1e6, l.b.String())
}

// warnUnknownOnce: misspelt DPML_* names are named once per process.
var warnUnknownOnce sync.Once

// llcBytes is leaders.LLCBytes read once per process: the cache's size
// does not change while it runs, and a program that sets up communicators
// as it goes read sysfs in every setup.
var llcBytes = sync.OnceValues(leaders.LLCBytes)
