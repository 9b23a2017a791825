package dpml

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// The node segments of closed communicators stay mapped in a small pool,
// each under a token its node head drew when it created it, so that a
// later communicator of the same node ranks takes it instead of a new one:
// no segment to create and open, and its pages already in every local
// rank's page tables (a new segment's pages fault in during the
// communicator's first calls). A program that splits or duplicates
// communicators as it goes sets each one up on the segment the one before
// left.
//
// The node head names its pooled segments of the right size and rank
// count by token; the communicator takes the first that every local rank
// holds. A rank holds it only if it mapped the segment for a
// communicator it has closed, so the new communicator's local ranks are
// then exactly that communicator's: all of them are past its last call,
// and the head may clear the segment's control lines (flags restart at
// generation 0) before a node barrier lets anyone use it. Otherwise every
// rank puts what it took back and the node creates a new segment.

// segPoolMax bounds the segments a process names in one offer (and,
// by default, DPML_SEGMENT_POOL, those it keeps).
const segPoolMax = 2

// poolLimit is how many segments the process keeps (DPML_SEGMENT_POOL; a
// value that does not parse keeps the default).
func poolLimit() int {
	n, err := config.Int(config.SegmentPool)
	if err != nil {
		return segPoolMax
	}
	return n
}

// segPool is the process's pool of closed communicators' node segments.
var segPool struct {
	mu sync.Mutex
	e  []pooledSegment // oldest first
	// hits and misses count the offers taken and refused (tests).
	hits, misses atomic.Int64
}

// pooledSegment is one pooled segment: its token, the node's rank count
// and size it was made for, and the mapping.
type pooledSegment struct {
	token    uint64
	ppn      int
	size     int
	mem      *shm.Segment
	reserved bool // taken by a setup in progress
}

// segTokens numbers the segments this process creates as a node head.
var segTokens atomic.Uint64

// newSegToken is a token unique on the node: the head's process id and
// its count of segments.
func newSegToken() uint64 {
	return uint64(os.Getpid())<<24 | segTokens.Add(1)&(1<<24-1)
}

// poolHeld reserves the pooled segments for ppn ranks of size bytes among
// tokens (or, for tokens nil, up to segPoolMax of them, newest first, and
// returns their tokens) and returns a mask of those reserved: bit i for
// tokens[i].
func poolHeld(tokens []uint64, ppn, size int) ([]uint64, uint64) {
	p := &segPool
	p.mu.Lock()
	defer p.mu.Unlock()
	offer := tokens == nil
	var mask uint64
	for i := len(p.e) - 1; i >= 0; i-- {
		e := &p.e[i]
		if e.reserved || e.ppn != ppn || e.size != size {
			continue
		}
		if offer && len(tokens) < segPoolMax {
			tokens = append(tokens, e.token)
		}
		for j, t := range tokens {
			if t == e.token {
				e.reserved = true
				mask |= 1 << j
			}
		}
	}
	return tokens, mask
}

// poolMem returns the mapping of the pooled segment of token.
func poolMem(token uint64) *shm.Segment {
	p := &segPool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.e {
		if e.token == token {
			return e.mem
		}
	}
	return nil
}

// poolSettle ends a reservation of token: taken (the communicator keeps
// the segment: it leaves the pool) or put back.
func poolSettle(token uint64, taken bool) {
	p := &segPool
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.e {
		if p.e[i].token == token && p.e[i].reserved {
			if taken {
				p.e = append(p.e[:i], p.e[i+1:]...)
			} else {
				p.e[i].reserved = false
			}
			return
		}
	}
}

// poolPut keeps a closed communicator's segment for reuse, closing the
// oldest unreserved one when the pool is full. It reports false when the
// segment was not kept (the caller closes it).
func poolPut(token uint64, ppn, size int, mem *shm.Segment) bool {
	if token == 0 {
		return false
	}
	limit := poolLimit()
	p := &segPool
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 0; len(p.e) >= max(limit, 1) && i < len(p.e); {
		if p.e[i].reserved {
			i++
			continue
		}
		_ = p.e[i].mem.Close() // nobody uses it: its communicator is closed
		p.e = append(p.e[:i], p.e[i+1:]...)
	}
	if limit == 0 || len(p.e) >= limit {
		return false
	}
	p.e = append(p.e, pooledSegment{token: token, ppn: ppn, size: size, mem: mem})
	return true
}

// reuseSegment is mapSegment's first try (collective over c.node): the
// node head names its pooled segments for this node's rank count and
// size, every rank reserves those it holds, and the node takes the first
// that every rank holds, the head clearing its control lines (dataOff
// bytes) before a barrier. ok false: no segment was taken, nothing is
// left reserved, and the node creates one.
func (c *Comm) reuseSegment(size, dataOff int) (mem *shm.Segment, token uint64, ok bool, err error) {
	offer := make([]int64, 1+segPoolMax) // count, then the tokens
	var tokens []uint64
	var mask uint64
	if c.local == 0 {
		tokens, mask = poolHeld(nil, c.ppn, size)
		offer[0] = int64(len(tokens))
		for i, t := range tokens {
			offer[1+i] = int64(t)
		}
	}
	if err := mpi.Bcast(c.node, offer, 0); err != nil {
		if c.local == 0 {
			poolRelease(tokens, mask, -1)
		}
		return nil, 0, false, fmt.Errorf("broadcast pooled segments: %w", err)
	}
	if offer[0] == 0 {
		return nil, 0, false, nil
	}
	if c.local != 0 {
		tokens = make([]uint64, offer[0])
		for i := range tokens {
			tokens[i] = uint64(offer[1+i])
		}
		_, mask = poolHeld(tokens, c.ppn, size)
	}
	all := []int64{int64(mask)}
	if err := mpi.AllreduceInPlace(c.node, all, mpi.OpBand); err != nil {
		poolRelease(tokens, mask, -1)
		return nil, 0, false, fmt.Errorf("pooled segments: %w", err)
	}
	if all[0] == 0 {
		poolRelease(tokens, mask, -1)
		segPool.misses.Add(1)
		return nil, 0, false, nil
	}
	pick := bits.TrailingZeros64(uint64(all[0]))
	token = tokens[pick]
	mem = poolMem(token)
	poolRelease(tokens, mask, pick)
	if c.local == 0 {
		clear(mem.Bytes()[:dataOff]) // the control lines: every flag back to generation 0
	}
	if err := c.node.Barrier(); err != nil {
		return nil, 0, false, errors.Join(fmt.Errorf("pooled segment barrier: %w", err), mem.Close())
	}
	segPool.hits.Add(1)
	return mem, token, true, nil
}

// poolRelease ends the reservations of mask over tokens: the one at
// index taken leaves the pool (its communicator keeps the mapping), the
// others are put back.
func poolRelease(tokens []uint64, mask uint64, taken int) {
	for i, t := range tokens {
		if mask&(1<<i) != 0 {
			poolSettle(t, i == taken)
		}
	}
}
