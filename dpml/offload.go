package dpml

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
	"github.com/dpmlgo/dpml/sharp"
)

// The in-network reduction offload (package sharp) of the inter-node step,
// as the DPML paper's SHArP designs use it (sections 4.6 and 6.2):
//
//   - Only small messages: up to DPML_OFFLOAD_BYTES (4 KiB: the paper's
//     crossover, past which the host's parallel leaders win), with a
//     predefined op and an element type the switches reduce.
//   - Node level: one leader per node (the tree's root, the node leader
//     nearest the HCA) offloads the whole message; best at low ppn.
//   - Socket level: one leader per socket, each offloading its partition of
//     the message over its own group (a SHArP group holds one process per
//     node, so leader communicator j is group j); best at high ppn, where
//     one node leader would gather across the inter-socket link.
//
// Everything else takes the host path. New attaches the groups (leader
// positions 0..A-1, A = 1 or the sockets per node) and all ranks agree on
// the capabilities, so every rank takes the same dispatch decision without
// communicating. A plan carries the decision in Plan.Offload: forced per
// call with Override.Offload (plan spec offload=sharp|host) or chosen by
// routeOffload below; a call the offload cannot take runs on the host.

// offload is what New attached.
type offload struct {
	mode     string       // DPML_OFFLOAD
	backend  string       // "libsharp" or "mpi"
	group    *sharp.Group // this rank's group (leaders at positions < leaders)
	leaders  int          // A: positions 0..A-1 of every node hold a group
	sockets  int          // fewest sockets of a node
	socket   bool         // the auto rule's level: socket (A leaders) or node (1)
	bytes    int          // DPML_OFFLOAD_BYTES
	caps     sharp.Caps   // agreed over the whole communicator
	emulated bool
}

// OffloadInfo describes a communicator's offload (dpmlbench info, reports).
type OffloadInfo struct {
	Mode     string     // DPML_OFFLOAD
	Backend  string     // "libsharp" or "mpi"; "" when none is attached
	Emulated bool       // the switch is the tests' emulation (internal/testkit/fakesharp)
	Leaders  int        // leader positions holding a group (1: node level only)
	Sockets  int        // fewest sockets of a node
	Socket   bool       // the engine's choice is socket level (else node level)
	Bytes    int        // DPML_OFFLOAD_BYTES
	Caps     sharp.Caps // agreed capabilities
	Reason   string     // why none is attached
	Ops      uint64     // operations this rank's group completed (leaders only)
}

// Offload describes the communicator's offload.
func (c *Comm) Offload() OffloadInfo {
	if c.off == nil {
		mode, _ := config.Enum(config.Offload)
		return OffloadInfo{Mode: mode, Reason: c.offReason}
	}
	o := c.off
	return OffloadInfo{Mode: o.mode, Backend: o.backend, Emulated: o.emulated, Leaders: o.leaders,
		Sockets: o.sockets, Socket: o.socket, Bytes: o.bytes, Caps: o.caps, Ops: o.group.Ops()}
}

// String is one line: "libsharp (EMULATED switch), node level, 1 leader(s),
// up to 4096 B; types ...", or "off (reason)".
func (i OffloadInfo) String() string {
	if i.Backend == "" {
		if i.Reason != "" {
			return i.Mode + " (" + i.Reason + ")"
		}
		return i.Mode
	}
	b := i.Backend
	if i.Emulated {
		b += " (EMULATED switch)"
	}
	level := "node level"
	if i.Socket {
		level = "socket level"
	}
	return fmt.Sprintf("%s, %s, groups on %d leader(s) per node (%d socket(s)), up to %d B; %v",
		b, level, i.Leaders, i.Sockets, i.Bytes, i.Caps)
}

// setupOffload attaches the offload DPML_OFFLOAD asks for. It is collective
// over the communicator and takes the same collectives on every rank (the
// settings it reads were agreed before). A backend that cannot be loaded
// or attached is not an error: the calls take the host path, with a
// warning unless DPML_OFFLOAD=auto. The error is for MPI failures.
func (c *Comm) setupOffload() error {
	mode, err := config.Enum(config.Offload)
	if err != nil || mode == "off" {
		c.offReason = "DPML_OFFLOAD=off"
		return err
	}
	if c.nodes < 2 { // agreed: every rank returns here
		c.offReason = "one node: no inter-node step to offload"
		return nil
	}
	nb, err := config.Bytes(config.OffloadBytes)
	if err != nil {
		return err
	}
	lead, kw, err := config.IntOr(config.OffloadLead)
	if err != nil {
		return err
	}
	path, _ := config.Get(config.SharpLib)

	s := []int64{int64(max(1, len(leaders.SocketLeaders(c.places))))}
	if err := mpi.AllreduceInPlace(c.world, s, mpi.OpMin); err != nil {
		return fmt.Errorf("offload: fewest sockets: %w", err)
	}
	off := &offload{mode: mode, backend: mode, bytes: int(nb), sockets: int(s[0])}
	if mode == "auto" {
		off.backend = "libsharp"
	}
	// The paper: socket level wins from ppn 4 on multi-socket nodes.
	autoSocket := off.sockets > 1 && c.minPPN >= 4
	switch kw {
	case "node":
		off.leaders = 1
	case "socket":
		off.leaders, off.socket = off.sockets, off.sockets > 1
	case "auto":
		off.leaders, off.socket = 1, autoSocket
		if autoSocket {
			off.leaders = off.sockets
		}
	default: // N leaders standing in for N sockets
		off.leaders, off.socket = lead, lead > 1
	}
	off.leaders = max(1, min(off.leaders, c.minPPN))
	off.socket = off.socket && off.leaders > 1

	var attachErr error
	if c.pos < off.leaders && c.leaderComm != nil {
		var b sharp.Backend
		if b, attachErr = sharp.Open(off.backend, path); attachErr == nil {
			// Attach agrees within the leader communicator: all of its
			// members hold a group, or none does.
			off.group, attachErr = b.Attach(c.leaderComm, sharp.AttachOptions{MaxBytes: off.bytes, Timeout: c.wait.Timeout})
		}
	}
	// Every rank must take the same dispatch decisions: agree on the
	// capabilities (and that every group attached) over the communicator.
	w := sharp.NoCaps()
	emu := []int32{0}
	switch {
	case attachErr != nil:
		w = sharp.FailedWords()
	case off.group != nil:
		w = off.group.Caps().Words()
		if off.group.Emulated() {
			emu[0] = 1
		}
	}
	if err := mpi.AllreduceInPlace(c.world, w, mpi.OpMin); err != nil {
		return errors.Join(fmt.Errorf("offload: agree on capabilities: %w", err), off.group.Close(false))
	}
	if err := mpi.AllreduceInPlace(c.world, emu, mpi.OpMax); err != nil {
		return errors.Join(fmt.Errorf("offload: agree on the backend: %w", err), off.group.Close(false))
	}
	caps, ok := sharp.CapsFromWords(w)
	if !ok {
		// Some leader communicator has no group: offload on none, so
		// that every plan runs the same way on every node.
		cerr := off.group.Close(true) // collective over a leader communicator whose members all hold one
		why, err := c.firstError(attachErr)
		if err != nil {
			return errors.Join(err, cerr)
		}
		c.offReason = fmt.Sprintf("DPML_OFFLOAD=%s: %s", mode, why)
		if mode != "auto" {
			c.warnf("DPML_OFFLOAD=%s: calls take the host path: %s", mode, why)
		} else if c.verbose > 0 && c.rank == 0 {
			fmt.Fprintf(os.Stderr, "dpml: DPML_OFFLOAD=auto: no offload (%s)\n", why)
		}
		if attachErr != nil && c.verbose > 0 {
			fmt.Fprintf(os.Stderr, "dpml: rank %d: offload attach: %v\n", c.rank, attachErr)
		}
		return cerr
	}
	caps.OnePerNode = off.backend == "libsharp"
	off.caps, off.emulated = caps, emu[0] == 1
	c.off = off
	if c.verbose > 0 && c.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: offload %v\n", c.Offload())
	}
	return nil
}

// firstError returns, on every rank, "rank R: <its error>" for the lowest
// rank R with an error of its own (else the lowest with one relayed from
// another member: sharp.ErrElsewhere), collectively, so that every rank
// reports the same reason.
func (c *Comm) firstError(local error) (string, error) {
	first := []int32{int32(2 * c.size)}
	switch {
	case errors.Is(local, sharp.ErrElsewhere):
		first[0] = int32(c.size + c.rank)
	case local != nil:
		first[0] = int32(c.rank)
	}
	if err := mpi.AllreduceInPlace(c.world, first, mpi.OpMin); err != nil {
		return "", err
	}
	root := int(first[0]) % max(c.size, 1)
	if first[0] >= int32(2*c.size) {
		return "no rank says why", nil
	}
	var text []byte
	if c.rank == root {
		text = []byte(local.Error())
	}
	n := []int32{int32(len(text))}
	if err := mpi.Bcast(c.world, n, root); err != nil {
		return "", err
	}
	if c.rank != root {
		text = make([]byte, n[0])
	}
	if err := mpi.Bcast(c.world, text, root); err != nil {
		return "", err
	}
	return fmt.Sprintf("rank %d: %s", root, text), nil
}

// closeOffload releases this rank's group: with the library's teardown
// when the communicator is healthy, locally only after a failed call (a
// member may be gone, and the teardown could wait for it).
func (c *Comm) closeOffload() error {
	if c.off == nil {
		return nil
	}
	err := c.off.group.Close(c.err == nil)
	c.off = nil
	return err
}

// routeOffload is the dispatch rule, applied to a call before its plan is
// chosen: a call whose Offload is left to the engine goes to the offload
// when the type and op are supported and the message is at most
// DPML_OFFLOAD_BYTES, as a DPML plan on the level's leaders (node level:
// one leader, the reduction tree when the message fits it; socket level:
// one leader per socket, partitioned). A call that forces offload=sharp
// gets the same shape whatever its size, or the host when its type or op
// is not supported. What the caller forced (leaders, transport, variant)
// is kept; offloadFor then checks the resolved plan. Calls the rule does
// not take are left alone, so they still reach the tuner.
func (c *Comm) routeOffload(kind mpi.Kind, op mpi.Op, count int, o Override) Override {
	off := c.off
	if off == nil {
		return o
	}
	eff := o.or(c.fixed).or(c.env)
	supported := off.caps.Supports(kind, op) == nil
	bytes := count * kind.Size()
	switch eff.Offload {
	case plan.OffloadHost:
		return o
	case plan.OffloadSharp: // forced: the level's leaders unless forced too
		if !supported {
			o.Offload = plan.OffloadHost
			return o
		}
	default:
		if !supported || bytes == 0 || bytes > off.bytes || eff.Variant == Native || eff.Variant == Pipelined || eff.Pipeline > 1 {
			return o
		}
	}
	l := 1
	if off.socket {
		l = off.leaders
	}
	if eff.Leaders == 0 {
		o.Leaders = l
	} else {
		l = eff.Leaders
	}
	if eff.Intra == IntraAuto {
		o.Intra = IntraShm
		if l == 1 && bytes <= c.treeBytes {
			o.Intra = IntraTree
		}
	}
	if eff.Variant == Auto {
		o.Variant = DPML
	}
	o.Offload = plan.OffloadSharp
	return o
}

// offloadFor resolves a plan's Offload: sharp only when the plan has an
// inter-node step run one segment at a time (not overlapped), every
// leader holds a group, and each leader's partition of a segment fits what
// a group takes at once. Without an offload, a plan that did not ask for
// one says nothing (its spec is unchanged).
func (c *Comm) offloadFor(p *Plan, want plan.Offload) plan.Offload {
	switch {
	case c.off == nil && want == plan.OffloadAuto:
		return plan.OffloadAuto
	case c.off == nil || want != plan.OffloadSharp:
		return plan.OffloadHost
	case !p.Has(PhaseInter) || p.Overlap || p.Leaders > c.off.leaders:
		return plan.OffloadHost
	}
	if _, per := plan.Split(p.SegElems, p.Leaders, p.Align); per*p.ElemSize > c.off.bytes {
		return plan.OffloadHost
	}
	return plan.OffloadSharp
}

// offloadsAlone reports whether a call on a communicator of one rank per
// node goes to the offload (plan() runs such communicators natively
// otherwise): the paper's largest gain, node level at ppn 1. It holds
// exactly when offloadFor will give the resolved one-leader plan sharp.
func (c *Comm) offloadsAlone(bytes int, o Override) bool {
	return c.off != nil && o.Offload == plan.OffloadSharp && o.Variant != Native && o.Variant != Pipelined &&
		o.Pipeline <= 1 && bytes <= c.off.bytes
}

// offloadInter is the inter-node step of an offloaded plan: this leader's
// reduced partition (n elements at res, in the node segment) reduced in
// place with the same leader of every other node through its group.
// Dispatch (routeOffload, offloadFor) only offloads what the agreed
// capabilities take, so any error, a refusal included, fails the call.
func (c *Comm) offloadInter(res unsafe.Pointer, n int, kind mpi.Kind, op mpi.Op) error {
	if n == 0 {
		return nil
	}
	return c.off.group.Allreduce(res, n, kind, op, &c.wait)
}
