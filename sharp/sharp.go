package sharp

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// ErrNotSupported says the offload cannot take this call (or cannot be
// used at all): the caller runs the step on the host instead. Nothing has
// been started when an operation returns it, and an attached Group returns
// it on every member alike (it depends only on the arguments and on the
// capabilities agreed at Attach), so every member takes the host path
// together.
var ErrNotSupported = errors.New("sharp: not supported by the offload")

// ErrUnavailable says a backend cannot be loaded or attached (library
// absent, no devices, an attach step failed on some member). It is also
// ErrNotSupported (errors.Is): the answer is the host path.
var ErrUnavailable error = unavailable{}

type unavailable struct{}

func (unavailable) Error() string { return "sharp: offload unavailable" }

// Is makes ErrUnavailable an ErrNotSupported too.
func (unavailable) Is(target error) bool { return target == ErrNotSupported }

// ErrElsewhere is wrapped by a collective step's error on the members
// where the step succeeded but failed on another member: the other
// member's error says why.
var ErrElsewhere = errors.New("failed on another member")

// ErrFailed says an operation that was started did not complete: the
// switch or a member is gone, or it ran past the timeout. The data of the
// call is lost, so the call fails; it does not go back to the host.
var ErrFailed = errors.New("sharp: offload operation failed")

// Fallback reports whether err sends the call back to the host path.
func Fallback(err error) bool { return errors.Is(err, ErrNotSupported) }

// Caps are what an attached offload can do, agreed by the members of a
// group (and, in the engine, by every rank of the communicator).
type Caps struct {
	// Kinds has bit k set when element kind mpi.Kind(k) is supported.
	Kinds uint64
	// Ops has bit o set when mpi.Op(o) is supported.
	Ops uint64
	// MaxPayload is the most bytes one operation may carry; 0: no limit.
	// Group.Allreduce cuts larger buffers into operations of at most this.
	MaxPayload int
	// MaxOutstanding is how many operations a member may have in flight.
	MaxOutstanding int
	// OnePerNode: the group may hold at most one process per node
	// (SHArP groups; UCC's tl/sharp refuses more), so the engine attaches
	// it to leader communicators only.
	OnePerNode bool
}

// Supports reports, as nil or an error wrapping ErrNotSupported, whether
// operations on kind with op can be offloaded.
func (c Caps) Supports(k mpi.Kind, op mpi.Op) error {
	switch {
	case k < 0 || int(k) >= 64 || c.Kinds&(1<<uint(k)) == 0:
		return fmt.Errorf("%w: element type %v", ErrNotSupported, k)
	case op < 0 || int(op) >= 64 || c.Ops&(1<<uint(op)) == 0:
		return fmt.Errorf("%w: op %v", ErrNotSupported, op)
	case !mpi.OpValidFor(op, k):
		return fmt.Errorf("%w: op %v on %v (not an MPI combination)", ErrNotSupported, op, k)
	}
	return nil
}

// String lists the capabilities for reports: "types int32,float64; ops
// sum,max; payload 1024 B; outstanding 4".
func (c Caps) String() string {
	var ks, os []string
	for _, k := range mpi.Kinds() {
		if c.Kinds&(1<<uint(k)) != 0 {
			ks = append(ks, k.String())
		}
	}
	for _, o := range mpi.Ops() {
		if c.Ops&(1<<uint(o)) != 0 {
			os = append(os, o.String())
		}
	}
	pl := "unlimited"
	if c.MaxPayload > 0 {
		pl = fmt.Sprintf("%d B", c.MaxPayload)
	}
	s := fmt.Sprintf("types %s; ops %s; payload %s per operation; %d outstanding",
		strings.Join(ks, ","), strings.Join(os, ","), pl, c.MaxOutstanding)
	if c.OnePerNode {
		s += "; one process per node"
	}
	return s
}

// AgreeWords is the length of Caps.Words.
const AgreeWords = 64 + 64 + 3

// Words encodes c so that an element-wise minimum over ranks
// (MPI_Allreduce with MPI_MIN) is the capabilities all of them have: one
// 0/1 word per kind and op bit, the payload (0, no limit, as the largest
// value), the outstanding operations and an ok flag (1). A rank without a
// group contributes NoCaps().
func (c Caps) Words() []uint64 {
	w := make([]uint64, AgreeWords)
	for i := 0; i < 64; i++ {
		w[i] = uint64(c.Kinds>>uint(i)) & 1
		w[64+i] = uint64(c.Ops>>uint(i)) & 1
	}
	w[128] = uint64(c.MaxPayload)
	if c.MaxPayload <= 0 {
		w[128] = ^uint64(0)
	}
	w[129] = uint64(max(c.MaxOutstanding, 1))
	w[130] = 1
	return w
}

// NoCaps is the neutral element of the agreement: every bit set, no
// limits, ok. A rank that holds no group (not a leader) contributes it.
func NoCaps() []uint64 {
	w := make([]uint64, AgreeWords)
	for i := range w {
		w[i] = ^uint64(0)
	}
	w[130] = 1
	return w
}

// FailedWords is what a rank whose attach failed contributes: ok = 0.
func FailedWords() []uint64 { return make([]uint64, AgreeWords) }

// CapsFromWords decodes the element-wise minimum of Words; ok is false
// when some rank contributed FailedWords.
func CapsFromWords(w []uint64) (c Caps, ok bool) {
	if len(w) != AgreeWords {
		return Caps{}, false
	}
	for i := 0; i < 64; i++ {
		c.Kinds |= (w[i] & 1) << uint(i)
		c.Ops |= (w[64+i] & 1) << uint(i)
	}
	if w[128] != ^uint64(0) && w[128] < 1<<31 {
		c.MaxPayload = int(w[128])
	}
	c.MaxOutstanding = int(min(w[129], 1<<16))
	return c, w[130] == 1
}

// kindBits and opBits build masks.
func kindBits(ks ...mpi.Kind) uint64 {
	var m uint64
	for _, k := range ks {
		m |= 1 << uint(k)
	}
	return m
}

func opBits(os ...mpi.Op) uint64 {
	var m uint64
	for _, o := range os {
		m |= 1 << uint(o)
	}
	return m
}

// Backend is an offload implementation: the real libsharp_coll, or the MPI
// library's own allreduce.
type Backend interface {
	// Name is "libsharp" or "mpi".
	Name() string
	// Attach builds a group over c, collectively: every rank of c calls
	// it, and every rank gets a Group or every rank gets an error (which
	// wraps ErrUnavailable). c should hold one process per node when
	// Caps().OnePerNode (the engine's leader communicators do).
	Attach(c *mpi.Comm, o AttachOptions) (*Group, error)
}

// AttachOptions configure a group.
type AttachOptions struct {
	// MaxBytes is the most bytes one Allreduce hands to the group (the
	// engine: DPML_OFFLOAD_BYTES); the libsharp backend registers a
	// staging buffer of this size once. 0: 4 KiB.
	MaxBytes int
	// Timeout is given to the library as its collective timeout where it
	// takes one (libsharp's coll_timeout); 0 or negative: the library's.
	Timeout time.Duration
}

// Group is an offload attached to one communicator. A Group is used by one
// goroutine at a time, and its members start operations in the same order,
// like any communicator's collectives.
type Group struct {
	impl     groupImpl
	caps     Caps
	backend  string
	emulated bool
	maxBytes int
	inflight []reqImpl // Allreduce's requests, reused
	ops      uint64    // operations completed
	started  int       // Start requests not yet completed
	stageAt  int       // staging bytes they use (reset when none is live)
	closed   bool
}

// groupImpl is what a backend implements.
type groupImpl interface {
	// start begins an in-place allreduce of count elements at p: inside
	// staging() when the backend has one, else the caller's memory.
	start(p unsafe.Pointer, count int, k mpi.Kind, op mpi.Op) (reqImpl, error)
	// staging is the backend's registered buffer (C memory, MaxBytes
	// long), into which the group copies the caller's bytes before the
	// operations and from which it copies the result back; nil when the
	// backend works on the caller's memory.
	staging() []byte
	close() error
}

// reqImpl is one started operation.
type reqImpl interface {
	test() (bool, error)
	free()
}

// Caps returns the group's agreed capabilities.
func (g *Group) Caps() Caps { return g.caps }

// Backend names the backend that built g.
func (g *Group) Backend() string { return g.backend }

// Emulated reports whether g runs on the emulated switch (the fake
// libsharp_coll the tests build): its results say nothing about real
// SHArP performance.
func (g *Group) Emulated() bool { return g.emulated }

// Ops is the number of operations this member's group completed (0 for
// a nil Group): a check that work really went through the offload.
func (g *Group) Ops() uint64 {
	if g == nil {
		return 0
	}
	return g.ops
}

// MaxBytes is the most bytes one Allreduce takes (AttachOptions.MaxBytes).
func (g *Group) MaxBytes() int { return g.maxBytes }

// Request is one started operation (Start).
type Request struct {
	r    reqImpl
	g    *Group
	buf  unsafe.Pointer
	st   []byte // its part of the staging buffer (nil: in place)
	done bool
}

// Start begins one non-blocking in-place allreduce of count elements of
// kind at buf, which must stay valid and unmoved (not Go heap memory) until
// Test reports completion. The buffer must fit one operation
// (Caps().MaxPayload) and MaxBytes; at most Caps().MaxOutstanding may be in
// flight, holding at most MaxBytes together. Unsupported calls return an
// error wrapping ErrNotSupported before anything starts.
func (g *Group) Start(buf unsafe.Pointer, count int, k mpi.Kind, op mpi.Op) (*Request, error) {
	n := count * k.Size()
	if err := g.check(count, k, op); err != nil {
		return nil, err
	}
	if g.caps.MaxPayload > 0 && n > g.caps.MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes in one operation, the payload limit is %d", ErrNotSupported, n, g.caps.MaxPayload)
	}
	if g.started >= max(g.caps.MaxOutstanding, 1) {
		return nil, fmt.Errorf("%w: %d operations in flight already (the limit)", ErrNotSupported, g.started)
	}
	req := &Request{g: g, buf: buf}
	p := buf
	if st := g.impl.staging(); st != nil {
		// Each live request has its own part of the staging buffer, so
		// the library never sees two operations on the same bytes.
		at := (g.stageAt + 63) &^ 63
		if at+n > len(st) {
			return nil, fmt.Errorf("%w: the %d-byte staging buffer is full: complete earlier requests first", ErrNotSupported, len(st))
		}
		req.st = st[at : at+n : at+n]
		copy(req.st, unsafe.Slice((*byte)(buf), n))
		p = unsafe.Pointer(unsafe.SliceData(st[at:]))
		g.stageAt = at + n
	}
	r, err := g.impl.start(p, count, k, op)
	if err != nil {
		if g.started == 0 {
			g.stageAt = 0
		}
		return nil, err
	}
	req.r = r
	g.started++
	return req, nil
}

// retire accounts for a finished Start request.
func (g *Group) retire() {
	if g.started--; g.started == 0 {
		g.stageAt = 0
	}
}

// Test reports whether the operation completed; on completion the result
// is in the buffer given to Start and the request is released.
func (r *Request) Test() (bool, error) {
	if r.done {
		return true, nil
	}
	ok, err := r.r.test()
	if err != nil || !ok {
		return false, err
	}
	r.r.free()
	r.done = true
	r.g.ops++
	if r.st != nil {
		copy(unsafe.Slice((*byte)(r.buf), len(r.st)), r.st)
	}
	r.g.retire()
	return true, nil
}

// Free releases an operation that will not be tested to completion (after
// a failure: the group should not be used again).
func (r *Request) Free() {
	if !r.done {
		r.r.free()
		r.done = true
		r.g.retire()
	}
}

func (g *Group) check(count int, k mpi.Kind, op mpi.Op) error {
	if g == nil || g.closed {
		return fmt.Errorf("%w: no group (closed)", ErrNotSupported)
	}
	if count < 0 {
		return fmt.Errorf("sharp: allreduce of %d elements", count)
	}
	if err := g.caps.Supports(k, op); err != nil {
		return err
	}
	if n := count * k.Size(); n > g.maxBytes {
		return fmt.Errorf("%w: %d bytes, more than the %d the group takes in one call", ErrNotSupported, n, g.maxBytes)
	}
	return nil
}

// Allreduce reduces count elements of kind at buf in place across the
// group's members and waits for the result, polling with w (its Timeout
// bounds the wait for each operation; its Abort word ends it). The buffer
// is cut into operations of at most Caps().MaxPayload bytes (whole
// elements), at most Caps().MaxOutstanding in flight. An error wrapping
// ErrNotSupported means nothing was started (the caller takes the host
// path); any other error (wrapping ErrFailed) leaves the buffer undefined.
func (g *Group) Allreduce(buf unsafe.Pointer, count int, k mpi.Kind, op mpi.Op, w *shm.Waiter) error {
	if err := g.check(count, k, op); err != nil {
		return err
	}
	if g.started > 0 {
		return fmt.Errorf("%w: %d requests of Start still in flight", ErrNotSupported, g.started)
	}
	if count == 0 {
		return nil
	}
	es := k.Size()
	n := count * es
	chunk := count
	if g.caps.MaxPayload > 0 {
		chunk = max(1, g.caps.MaxPayload/es)
		if chunk*es > g.caps.MaxPayload {
			return fmt.Errorf("%w: a %d-byte element is larger than the payload limit %d", ErrNotSupported, es, g.caps.MaxPayload)
		}
	}
	st := g.impl.staging()
	if st != nil {
		copy(st[:n], unsafe.Slice((*byte)(buf), n))
	}
	out := max(g.caps.MaxOutstanding, 1)
	live := g.inflight[:0]
	defer func() {
		// After a failure the started operations cannot be completed:
		// release them (the library forgets them; the group is not to be
		// used again).
		for i := range live {
			if live[i] != nil {
				live[i].free()
				live[i] = nil
			}
		}
		g.inflight = live[:0]
	}()
	// testHead completes the oldest operation when it is done: members
	// start operations in the same order, so completion in order is what
	// the switch delivers anyway, and the oldest bounds the window.
	testHead := func() (bool, error) {
		done, err := live[0].test()
		if err != nil || !done {
			return false, err
		}
		live[0].free()
		live[0] = nil
		live = live[1:]
		g.ops++
		return true, nil
	}
	for at := 0; at < count; at += chunk {
		m := min(chunk, count-at)
		for len(live) >= out {
			if err := w.Until(testHead); err != nil {
				return fmt.Errorf("%w: %s waits for operation %d of %d: %w", ErrFailed, g.backend, at/chunk-len(live)+1, ceilDiv(count, chunk), err)
			}
		}
		p := unsafe.Add(buf, at*es)
		if st != nil {
			p = unsafe.Pointer(&st[at*es])
		}
		r, err := g.impl.start(p, m, k, op)
		if err != nil {
			if at == 0 && Fallback(err) {
				return err // nothing started: the host path
			}
			return fmt.Errorf("%w: %s operation %d of %d: %w", ErrFailed, g.backend, at/chunk+1, ceilDiv(count, chunk), err)
		}
		live = append(live, r)
	}
	for len(live) > 0 {
		if err := w.Until(testHead); err != nil {
			return fmt.Errorf("%w: %s waits for the last %d operation(s): %w", ErrFailed, g.backend, len(live), err)
		}
	}
	if st != nil {
		copy(unsafe.Slice((*byte)(buf), n), st[:n])
	}
	return nil
}

// Close releases the group, collectively over its communicator when clean
// is true; with clean false (after a failed operation, when a member may
// be gone) it releases local state only and makes no call that could wait
// for the other members.
func (g *Group) Close(clean bool) error {
	if g == nil || g.closed {
		return nil
	}
	g.closed = true
	if !clean {
		return nil
	}
	return g.impl.close()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
