package main

// #include "dropin.h"
// #include "dpmlx.h"
import "C"

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/runtime/dropinhook"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/internal/runtime/idlethreads"
	"github.com/dpmlgo/dpml/mpi"
)

// main is required by -buildmode=c-shared and never runs.
func main() {}

// gitCommit is set by the Makefile (-ldflags -X main.gitCommit=...).
var gitCommit = "unknown"

// engines holds the DPML communicators the C layer refers to by id. Ids
// only grow, so an id released at MPI_Finalize and met again in a late
// delete callback finds nothing.
var (
	mu      sync.Mutex
	engines = map[uintptr]*dpml.Comm{}
	// view is a copy of engines, replaced (under mu) whenever engines
	// changes: every MPI_Allreduce looks its engine up, and reading
	// view takes no lock.
	view    atomic.Pointer[map[uintptr]*dpml.Comm]
	nextID  uintptr
	verbose int
	rank0   bool
	warned  bool  // a setup failure was reported
	badSet  bool  // a disagreement on the settings was reported
	initErr error // this rank's invalid settings (every communicator's agreement fails)
)

// reasonName names the DPML_P_* reason i of dropin.h (dpml_reason_words,
// shared with DPMLX_Last_plan).
func reasonName(i int) string { return C.GoString(C.dpml_reason_words[i]) }

//export dpmlGoInit
func dpmlGoInit(s *C.dpml_settings) C.int {
	// The engine's own MPI_Allreduce calls go to PMPI_Allreduce: this
	// library is the program's MPI_Allreduce.
	mpi.SetInterposed()
	// Adopt the MPI the application initialized (mpi.InitThread leaves its
	// error handlers alone and never finalizes it).
	if _, err := mpi.InitThread(mpi.ThreadFunneled); err != nil {
		warnf("cannot adopt the application's MPI: %v; every MPI_Allreduce passes through", err)
		return 1
	}
	// DPML_GOSCHED (auto by default): the drop-in's Go code runs in
	// callbacks from the application's thread, and between them the
	// runtime sees that thread in a long system call: the same sysmon
	// storms as a Go caller's (package internal/runtime/gosched).
	var bad []error
	bad = appendErr(bad, gosched.Apply())
	quietRuntime()
	collectLess()
	s.world_rank = -1
	if w := mpi.World(); w != nil {
		s.world_rank = C.int(w.Rank())
		rank0 = w.Rank() == 0
	}
	startProfile(int(s.world_rank))
	// Invalid settings do not disable this rank on their own: that would
	// send its calls another way than the other ranks'. They make the
	// agreement at each communicator's first call fail on every rank
	// (dpmlGoAgree), which then passes that communicator through.
	v, err := config.Int(config.Verbose)
	bad = appendErr(bad, err)
	verbose = v
	s.verbose = C.int(v)
	off, err := config.Bool(config.Disable)
	bad = appendErr(bad, err)
	minBytes, err := config.Bytes(config.MinBytes)
	bad = appendErr(bad, err)
	from, err := config.Int(config.DropinFrom)
	bad = appendErr(bad, err)
	s.min_bytes = C.int64_t(minBytes)
	s.from_call = C.int64_t(max(from, 1))
	after, err := config.Duration(config.SetupAfter)
	bad = appendErr(bad, err)
	s.setup_after = C.double(after.Seconds())
	s.price_call, s.price_byte = C.double(config.SetupPriceCall), C.double(config.SetupPriceByte)
	world, err := config.Enum(config.SetupWorld)
	bad = appendErr(bad, err)
	switch world {
	case "init":
		s.setup_world = 1
	case "warm":
		s.setup_world = 2
	}
	if off {
		s.disabled = 1
	}
	initErr = errors.Join(bad...)
	if rank0 {
		// A misspelt setting is otherwise ignored without a word.
		for _, u := range config.Unknown(os.Environ()) {
			warnf("%v", u)
		}
	}
	if verbose >= 1 && rank0 {
		fmt.Fprintf(os.Stderr, "libdpml: DPML-Go commit %s on %s\nlibdpml: %v, GOMAXPROCS %d, %d runtime thread(s) at SCHED_IDLE, GOGC %s\nlibdpml: settings changed from the defaults: %s\n",
			gitCommit, mpi.LibraryVersion(), gosched.Sched(), runtime.GOMAXPROCS(0), demoted, gcReport(), config.Changed())
		if verbose >= 2 {
			fmt.Fprintf(os.Stderr, "libdpml: settings:\n%s", indent(config.Effective()))
		}
	}
	return 0
}

// dpmlGoNew builds the engine on the communicator with C handle h. It is
// collective over h: every rank calls it on the same MPI_Allreduce of h. It
// returns 0 (on every rank: dpml.New agrees on the outcome) when the engine
// cannot run there; the communicator's calls then pass through.
//
//export dpmlGoNew
func dpmlGoNew(h C.uintptr_t) C.uintptr_t {
	c := mpi.CommFromC(uintptr(h))
	if c == nil {
		return 0
	}
	d, err := dpml.New(c)
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		// Once per process (or always under DPML_VERBOSE): a bad setting
		// fails every communicator alike.
		if c.Rank() == 0 && (!warned || verbose >= 1) {
			warnf("DPML setup failed on a communicator of %d ranks; its MPI_Allreduce calls pass through: %v", c.Size(), err)
		}
		warned = true
		return 0
	}
	nextID++
	engines[nextID] = d
	publish()
	if verbose >= 2 {
		fmt.Fprintf(os.Stderr, "libdpml: rank %d: DPML set up on comm %#x (%d ranks, %d nodes, ppn %d): id %d\n",
			worldRank(), uintptr(h), d.Size(), d.Nodes(), d.PPN(), nextID)
	}
	return C.uintptr_t(nextID)
}

// dpmlGoAgree is collective over the communicator with C handle h: the
// ranks compare the drop-in's settings (DPML_DISABLE, DPML_MIN_BYTES,
// DPML_DROPIN_FROM_CALL) and whether they parsed, at the communicator's
// first eligible call. It returns 0 when they agree, 1 (on every rank)
// otherwise: the communicator's calls then pass through on every rank.
//
//export dpmlGoAgree
func dpmlGoAgree(h C.uintptr_t) C.int {
	c := mpi.CommFromC(uintptr(h))
	if c == nil {
		return 1
	}
	err := dropinhook.AgreeDropin(c, initErr)
	if err == nil {
		return 0
	}
	mu.Lock()
	first := !badSet
	badSet = true
	mu.Unlock()
	if c.Rank() == 0 && (first || verbose >= 1) {
		warnf("the settings of a communicator of %d ranks are invalid or differ between its ranks; its MPI_Allreduce calls pass through on every rank: %v", c.Size(), err)
	}
	return 1
}

// lookup returns engine id, or nil; it takes no lock (view).
func lookup(id C.uintptr_t) *dpml.Comm {
	if m := view.Load(); m != nil {
		return (*m)[uintptr(id)]
	}
	return nil
}

// publish replaces view with a copy of engines; the caller holds mu.
func publish() {
	m := maps.Clone(engines)
	view.Store(&m)
}

// dpmlGoAllreduce runs one allreduce on engine id. send is nil for
// MPI_IN_PLACE; otherwise it does not overlap recv (the C layer copies).
// The buffers are C memory, so typed slices over them are not subject to
// cgo's pointer rules. It returns 0 on success.
//
//export dpmlGoAllreduce
func dpmlGoAllreduce(id C.uintptr_t, send, recv unsafe.Pointer, count, kind, op C.int) C.int {
	d := lookup(id)
	if d == nil {
		warnf("allreduce on an unknown engine id %d", id)
		return 1
	}
	traceC(d)
	n, o := int(count), mpi.Op(op)
	var err error
	switch mpi.Kind(kind) {
	case mpi.KindInt8:
		err = reduce[int8](d, send, recv, n, o)
	case mpi.KindInt16:
		err = reduce[int16](d, send, recv, n, o)
	case mpi.KindInt32:
		err = reduce[int32](d, send, recv, n, o)
	case mpi.KindInt64:
		err = reduce[int64](d, send, recv, n, o)
	case mpi.KindUint8:
		err = reduce[uint8](d, send, recv, n, o)
	case mpi.KindUint16:
		err = reduce[uint16](d, send, recv, n, o)
	case mpi.KindUint32:
		err = reduce[uint32](d, send, recv, n, o)
	case mpi.KindUint64:
		err = reduce[uint64](d, send, recv, n, o)
	case mpi.KindFloat32:
		err = reduce[float32](d, send, recv, n, o)
	case mpi.KindFloat64:
		err = reduce[float64](d, send, recv, n, o)
	case mpi.KindComplex64:
		err = reduce[complex64](d, send, recv, n, o)
	case mpi.KindComplex128:
		err = reduce[complex128](d, send, recv, n, o)
	default:
		err = fmt.Errorf("element kind %d", int(kind))
	}
	if err != nil {
		warnf("MPI_Allreduce of %d elements (%v, %v) failed in the DPML engine: %v", n, mpi.Kind(kind), o, err)
		return 1
	}
	return 0
}

func reduce[T mpi.Number](d *dpml.Comm, send, recv unsafe.Pointer, n int, op mpi.Op) error {
	r := unsafe.Slice((*T)(recv), n)
	if send == nil {
		return dpml.AllreduceInPlace(d, r, op)
	}
	return dpml.Allreduce(d, unsafe.Slice((*T)(send), n), r, op)
}

// dpmlGoFusedState returns engine id's fused-call state (internal/runtime/dropinhook.FusedState:
// C memory, valid until the engine is released), or nil.
//
//export dpmlGoFusedState
func dpmlGoFusedState(id C.uintptr_t) unsafe.Pointer {
	if d := lookup(id); d != nil {
		return dropinhook.FusedState(d)
	}
	return nil
}

// dpmlGoWarm readies engine id for the program's first calls
// (dpml.Comm.Warm; collective over its communicator). A failure is printed;
// the engine is then failed on every rank and the program's calls say so.
//
//export dpmlGoWarm
func dpmlGoWarm(id C.uintptr_t) {
	d := lookup(id)
	if d == nil {
		return
	}
	if err := d.Warm(); err != nil {
		warnf("warming up MPI_COMM_WORLD: %v", err)
	}
	// Warm woke the runtime's threads; those it started since
	// dpmlGoInit are moved now.
	quietRuntime()
}

// ownCoreSpin is dropinhook.OwnCoreSpin once the runtime's threads are
// at SCHED_IDLE: about 50-100 us of polling on the device's cores. On
// nvidia-h200-x2 (1x32, 4-byte calls after a 50 ms pause) the calls after
// the first ran at 2.4-4 us with both, 9-13 us with either alone or
// neither.
const ownCoreSpin = 100_000

// dropinGCPercent is the garbage collector's target (GOGC) of libdpml.so's
// own Go runtime, unless the environment sets GOGC. The library's live
// heap is small (well under 1 MiB on the development machine) and its
// calls allocate nothing once set up; what it allocates is each
// communicator's setup (60-70 KiB), so a program that sets up
// communicators as it goes starts a collection every 50 or so at Go's
// default of 100. With the runtime's threads at SCHED_IDLE (quietRuntime)
// the collector's workers get the rank's core only when the rank blocks,
// so a cycle drags on while the rank's own goroutine assists and sweeps:
// on 1x2 (400 reversed splits, each set up at its first call) a set-up
// communicator cost 0.7-5.0 ms at GOGC 100 and 0.49-0.61 ms at 400. The
// heap's goal is then 16 MiB (Go's least goal, 4 MiB times GOGC/100) as
// long as the live heap stays under about 3 MiB.
const dropinGCPercent = 400

// collectLess sets dropinGCPercent unless GOGC is in the environment (the
// runtime has read it then, and the user's value stands).
func collectLess() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(dropinGCPercent)
	}
}

// gcReport is the collector's target in effect, as the runtime reports it
// (runtime/metrics), with where it comes from.
func gcReport() string {
	m := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(m)
	v := "unknown"
	if m[0].Value.Kind() == metrics.KindUint64 {
		v = strconv.FormatUint(m[0].Value.Uint64(), 10)
	}
	if g, set := os.LookupEnv("GOGC"); set {
		return fmt.Sprintf("%s (GOGC=%s in the environment)", v, g)
	}
	return v
}

// demoted counts the runtime's threads quietRuntime moved to SCHED_IDLE.
var demoted int

// quietRuntime moves the Go runtime's own threads to SCHED_IDLE (package
// idlethreads says why) when DPML_GOSCHED paces (auto, the default, or
// pace), and then lets ranks that own their cores poll longer before
// yielding (dropinhook.OwnCoreSpin). With auto it then stops pacing
// (gosched.Unpace): the storms pacing prevents now wake idle-class
// threads only, and each yield of a callback costs two thread switches,
// the whole of the first call after a pause. DPML_GOSCHED=pace keeps
// both. A failure to tell the runtime's threads changes nothing; it is
// said at DPML_VERBOSE=1.
func quietRuntime() {
	si := gosched.Sched()
	if !si.Pace && !si.Unpaced {
		return
	}
	n, err := idlethreads.Demote()
	demoted += n
	if demoted > 0 {
		dropinhook.OwnCoreSpin = ownCoreSpin
		if si.Mode == "auto" {
			gosched.Unpace()
		}
	}
	if err != nil && verbose >= 1 {
		warnf("the Go runtime's threads keep their scheduling policy: %v", err)
	}
}

// dpmlGoFusedFailed reports a fused call the C layer ran on engine id that
// failed with result rc (internal/runtime/dropinhook.FusedFailed), as dpmlGoAllreduce reports
// its failures.
//
//export dpmlGoFusedFailed
func dpmlGoFusedFailed(id C.uintptr_t, rc C.int) {
	d := lookup(id)
	if d == nil {
		warnf("fused allreduce on an unknown engine id %d", id)
		return
	}
	warnf("MPI_Allreduce failed in the DPML engine: %v", dropinhook.FusedFailed(d, int(rc)))
}

// dpmlGoRelease closes engine id: its communicators are freed and its
// shared memory unmapped. It runs in the attribute delete callback, inside
// the application's MPI_Comm_free.
//
//export dpmlGoRelease
func dpmlGoRelease(id C.uintptr_t) {
	mu.Lock()
	d := engines[uintptr(id)]
	delete(engines, uintptr(id))
	publish()
	mu.Unlock()
	if d == nil {
		return
	}
	if err := d.Close(); err != nil {
		warnf("releasing DPML state: %v", err)
	}
	C.dpml_note_released()
}

// dpmlGoFinalize runs in MPI_Finalize before the MPI library finalizes:
// it closes every engine still open (communicators never freed, World) and
// prints the counters under DPML_VERBOSE.
//
//export dpmlGoFinalize
func dpmlGoFinalize() {
	defer stopProfile()
	mu.Lock()
	ids := slices.Sorted(maps.Keys(engines)) // creation order
	mu.Unlock()
	for _, id := range ids {
		dpmlGoRelease(C.uintptr_t(id))
	}
	if verbose >= 1 {
		fmt.Fprintf(os.Stderr, "libdpml: rank %d: %s\n", worldRank(), summary())
	}
}

// summary is the counters line printed at MPI_Finalize under DPML_VERBOSE:
// "routed N passed M (reason n, ...) comms set up S released R fused F
// blocks B agreed A", F of the N routed calls run by the C layer without
// entering Go, B of those the calls of the tuner's confirmation blocks
// (timed), A the settings agreements run (communicators' first calls
// until one of every rank of MPI_COMM_WORLD agreed).
func summary() string {
	var passed uint64
	s := ""
	for i := 1; i < C.DPML_NREASONS; i++ {
		n := uint64(C.dpml_counts[i])
		passed += n
		if n > 0 {
			s += fmt.Sprintf(" %s %d", reasonName(i), n)
		}
	}
	return fmt.Sprintf("routed %d passed %d (%s ) comms set up %d released %d fused %d blocks %d sampled %d parked %d agreed %d",
		uint64(C.dpml_counts[0]), passed, s, uint64(C.dpml_comms_setup), uint64(C.dpml_comms_released), uint64(C.dpml_fused_calls),
		uint64(C.dpml_block_calls), uint64(C.dpml_sample_calls), uint64(C.dpml_parked_calls), uint64(C.dpml_agreements))
}

func worldRank() int {
	if w := mpi.World(); w != nil {
		return w.Rank()
	}
	return -1
}

func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "libdpml: rank %d: "+format+"\n", append([]any{worldRank()}, args...)...)
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("libdpml:   " + l + "\n")
	}
	return b.String()
}

// Extension entry points (dpmlx.h): the C functions DPMLX_* in dropin.c
// call these.

// putString copies s into the C buffer buf of n bytes, truncated to n-1
// bytes and NUL-terminated, and returns len(s) (so n <= len(s) means it
// was truncated, as with snprintf).
func putString(buf *C.char, n C.int, s string) C.int {
	if buf == nil || n < 1 {
		return C.int(len(s))
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	m := copy(b[:n-1], s)
	b[m] = 0
	return C.int(len(s))
}

// plans holds every plan spec DPMLX_Set_plan or DPMLX_Check_plan parsed,
// by slot (one per canonical spec, never removed), so that the C side hands
// a plan to an engine by number and the switch allocates nothing.
var plans struct {
	sync.Mutex
	list []dpml.Override
	slot map[string]int
}

// maxPlans bounds the distinct specs a process may register.
const maxPlans = 4096

// dpmlGoParseSpec parses a plan spec (dpml.ParseOverride): on success it
// writes the canonical spec into buf, sets *native when it is the MPI
// library's allreduce, and returns the plan's slot (>= 0; 0 when reg is 0:
// a check only, nothing registered); on failure it writes the error and
// returns -1.
//
//export dpmlGoParseSpec
func dpmlGoParseSpec(spec *C.char, buf *C.char, n C.int, native *C.int, reg C.int) C.int {
	o, err := dpml.ParseOverride(C.GoString(spec))
	canon := o.Spec()
	plans.Lock()
	defer plans.Unlock()
	slot, ok := plans.slot[canon]
	if err == nil && !ok && reg != 0 {
		if len(plans.list) >= maxPlans {
			err = fmt.Errorf("more than %d distinct plan specs in one process", maxPlans)
		} else {
			if plans.slot == nil {
				plans.slot = map[string]int{}
			}
			slot = len(plans.list)
			plans.list = append(plans.list, o)
			plans.slot[canon] = slot
		}
	}
	if err != nil {
		putString(buf, n, err.Error())
		return -1
	}
	if native != nil {
		*native = 0
		if o.Variant == dpml.Native {
			*native = 1
		}
	}
	// A canonical spec is short (under 80 bytes: numbers lose leading
	// zeros), so the callers' DPMLX_MAX_SPEC buffers always hold it.
	putString(buf, n, canon)
	return C.int(slot)
}

// dpmlGoSetOverride makes the non-native plan in slot the plan of engine
// id's later calls (auto: the engine's own choice again). It allocates
// nothing. It returns 0, or 1 if the engine or the slot is unknown.
//
//export dpmlGoSetOverride
func dpmlGoSetOverride(id C.uintptr_t, slot C.int) C.int {
	d := lookup(id)
	plans.Lock()
	ok := slot >= 0 && int(slot) < len(plans.list)
	var o dpml.Override
	if ok {
		o = plans.list[slot]
	}
	plans.Unlock()
	if d == nil || !ok || o.Variant == dpml.Native {
		return 1
	}
	d.SetOverride(o)
	return 0
}

// dpmlGoLastPlan writes the plan of engine id's latest call (DPMLX_Last_plan's
// format: the plan spec, then " segments=N" and " stream") into buf and
// returns the full length, or -1 when there is no engine id or no call yet.
//
//export dpmlGoLastPlan
func dpmlGoLastPlan(id C.uintptr_t, buf *C.char, n C.int) C.int {
	d := lookup(id)
	if d == nil {
		return -1
	}
	s := describePlan(d.LastPlan())
	if in, ok := d.LastTunerInfo(); ok {
		s += fmt.Sprintf(" tuner=%s switches=%d changes=%d calls=%d", in.State, in.Switches, in.Changes, in.Calls)
	}
	return putString(buf, n, s)
}

// describePlan is DPMLX_Last_plan's text for a plan the engine ran.
func describePlan(p dpml.Plan) string {
	s := p.Spec()
	if p.Variant == dpml.Native || p.Variant == dpml.Auto {
		return s
	}
	s += fmt.Sprintf(" segments=%d", p.Segments)
	if p.Stream {
		s += " stream"
	}
	return s
}

var versionOnce = sync.OnceValue(func() *C.char {
	return C.CString(fmt.Sprintf("DPML-Go %s (dpmlx %d)", gitCommit, C.DPMLX_VERSION))
})

// dpmlGoVersion is DPMLX_Library_version's string (allocated once, never
// freed).
//
//export dpmlGoVersion
func dpmlGoVersion() *C.char { return versionOnce() }

// profile is the DPML_CPUPROFILE file being written, or nil.
var profile *os.File

// startProfile starts DPML_CPUPROFILE's CPU profile of this process (a
// diagnostic: a failure is reported and ignored).
func startProfile(rank int) {
	path, _ := config.Get(config.CPUProfile)
	if path == "" {
		return
	}
	path = strings.ReplaceAll(path, "%r", strconv.Itoa(rank))
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		warnf("%s: %v", config.CPUProfile, err)
		return
	}
	profile = f
}

// stopProfile ends the CPU profile, if one is being written.
func stopProfile() {
	if profile == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := profile.Close(); err != nil {
		warnf("%s: %v", config.CPUProfile, err)
	}
	profile = nil
}
