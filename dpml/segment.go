package dpml

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/plan"
	"github.com/dpmlgo/dpml/shm"
)

// inlineBytes is the payload a control line carries beside its flag: the
// tree transport moves messages this small inside the flag's own cache line,
// so a hop costs one line transfer instead of two. (plan.InlineBytes: the
// cost model prices the same boundary.)
const inlineBytes = plan.InlineBytes

// ctlLine is one cache line of the node segment's control area, written by
// exactly one rank (single writer: no line is ever written by two cores, so
// no rank's store invalidates a line another rank is writing). seq is a
// generation number that only grows: "my data of generation seq is ready".
// The payload is written before seq is raised and read after it is seen, so
// the atomic store and load order it.
type ctlLine struct {
	seq     atomic.Uint64
	payload [inlineBytes / 8]uint64
}

// The payload words of an input line under cross-memory attach: the
// addresses of the rank's buffers of the current call.
const (
	cmaSendWord = 0
	cmaRecvWord = 1
)

// data returns the address of the line's inline payload without touching
// the line: &l.payload[0] would load from it (Go's nil check), and a rank
// about to write its own line, which its readers hold, then waits a whole
// line transfer for a value it never uses (perf: 11% of a leaf's time in
// the tree at 8 B). unsafe.Add does no check; l is never nil here.
func (l *ctlLine) data() unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(l), unsafe.Offsetof(l.payload))
}

// nodeSegment is the typed view of a node's shared-memory segment, one per
// node, mapped by every local rank at the same layout:
//
//	offset 0              abort line      (any rank may raise it; it only goes up)
//	64                    in[0..ppn)      ctlLine per local rank: "my input (or
//	                                      my subtree's partial) of generation g"
//	64*(1+ppn)            out[0..ppn)     ctlLine per leader position: "my
//	                                      result of generation g"
//	64*(1+2ppn)           tin[1..MaxTrees)[0..ppn)
//	                                      ctlLine per tree j >= 1 and local
//	                                      rank: "my partial of tree j of
//	                                      generation g" (tree 0's are in[])
//	padded to a page      data area:
//	  buffer set 0        slot[0..ppn) | result   (segBudget bytes each)
//	  buffer set 1        slot[0..ppn) | result
//	  exchange            stamps[0..2)[0..ppn)    the learner's commit step
//	                      verdicts[0..2)          (tune.go): local rank i's
//	                                              times, written by i only,
//	                                              read by the node's folder;
//	                                              the folder's verdicts, read
//	                                              by all
//
// Segment s of a call uses buffer set g mod 2 (g its generation), so segment
// s+1 fills one set while segment s drains the other. Every field is set
// once at mapping time and read-only afterwards.
type nodeSegment struct {
	mem     *shm.Segment
	abort   *atomic.Uint64
	in, out []*ctlLine
	// The flag words by pointer, taken once: &in[i].seq on the hot path
	// would be nil-checked by a load from the line (see data).
	inSeq  []*atomic.Uint64 // &in[i].seq, for waits over all local ranks
	outSeq []*atomic.Uint64 // &out[i].seq
	// treeSeq[j][i]: local rank i's flag in tree j of a plan with several
	// reduction trees; treeSeq[0] is inSeq.
	treeSeq    [plan.MaxTrees][]*atomic.Uint64
	data       unsafe.Pointer
	xchg       unsafe.Pointer // the exchange areas (xchgArea)
	ppn        int
	slotStride int // bytes between input slots (= segBudget)
	bufStride  int // bytes between the two buffer sets
}

// segmentLayout returns the size of a node segment for ppn ranks with slots
// of slot bytes, and the offset of its data area.
func segmentLayout(ppn, slot int) (size, dataOff int) {
	hdr := alignBytes * (1 + (1+plan.MaxTrees)*ppn)
	dataOff = shm.PadTo(hdr, pageBytes)
	return dataOff + 2*slot*(ppn+1) + (2*ppn+2)*xchgStride, dataOff
}

// xchgStride is the bytes of one exchange area of the tuner's commit step
// (tune.go, exchangeState): a rank's stamps or the node's verdicts (at
// most learn.ExchangeValues 8-byte values), padded to a line. The
// segment holds two stamp areas per local rank (even and odd commit
// steps) and two verdict areas.
var xchgStride = shm.PadTo(8*learn.ExchangeValues, alignBytes)

// viewSegment lays the typed view over a mapped segment.
func viewSegment(mem *shm.Segment, ppn, slot int) (*nodeSegment, error) {
	size, dataOff := segmentLayout(ppn, slot)
	b := mem.Bytes()
	if len(b) < size {
		return nil, fmt.Errorf("node segment of %d bytes, want %d", len(b), size)
	}
	if uintptr(unsafe.Pointer(&b[0]))%alignBytes != 0 {
		return nil, fmt.Errorf("node segment mapped at an address not aligned to %d bytes", alignBytes)
	}
	mem.Populate(0, dataOff) // the flag lines; data pages fault in where plans use them
	s := &nodeSegment{mem: mem, ppn: ppn, slotStride: slot, bufStride: slot * (ppn + 1)}
	s.abort = shm.Uint64At(b, 0)
	line := func(i int) *ctlLine { return (*ctlLine)(unsafe.Pointer(&b[alignBytes*(1+i)])) }
	s.in, s.out, s.inSeq, s.outSeq = make([]*ctlLine, ppn), make([]*ctlLine, ppn), make([]*atomic.Uint64, ppn), make([]*atomic.Uint64, ppn)
	for i := range ppn {
		s.in[i], s.out[i] = line(i), line(ppn+i)
		s.inSeq[i] = &s.in[i].seq
		s.outSeq[i] = &s.out[i].seq
	}
	s.treeSeq[0] = s.inSeq
	for j := 1; j < plan.MaxTrees; j++ {
		s.treeSeq[j] = make([]*atomic.Uint64, ppn)
		for i := range ppn {
			s.treeSeq[j][i] = &line((1+j)*ppn + i).seq
		}
	}
	s.data = unsafe.Pointer(&b[dataOff])
	s.xchg = unsafe.Pointer(&b[dataOff+2*slot*(ppn+1)])
	return s, nil
}

// stampArea returns local rank i's stamp area a (0 or 1).
func (s *nodeSegment) stampArea(a, i int) unsafe.Pointer {
	return unsafe.Add(s.xchg, (a*s.ppn+i)*xchgStride)
}

// verdictArea returns the node's verdict area a (0 or 1).
func (s *nodeSegment) verdictArea(a int) unsafe.Pointer {
	return unsafe.Add(s.xchg, (2*s.ppn+a)*xchgStride)
}

// slot returns local rank i's input slot in buffer set b.
func (s *nodeSegment) slot(b uint64, i int) unsafe.Pointer {
	return unsafe.Add(s.data, int(b&1)*s.bufStride+i*s.slotStride)
}

// result returns the result area of buffer set b.
func (s *nodeSegment) result(b uint64) unsafe.Pointer { return s.slot(b, s.ppn) }

// memmove copies n bytes from src to dst (non-overlapping or not).
func memmove(dst, src unsafe.Pointer, n int) {
	if n > 0 {
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	}
}
