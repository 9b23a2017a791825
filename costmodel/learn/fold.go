package learn

import (
	"fmt"
	"math"
)

// The commit step by fold: an alternative to Pending, Exits and their two
// allreduces for an engine that can gather every rank's times itself (a
// node's ranks through their shared memory, the nodes' first leaders
// through one gather among them). It takes one exchange, not two, and
// only one rank per node reads the others':
//
//	every rank      Stamps: its entries, exits and block gaps (stampLen)
//	one per node    Fold over the node's ranks' stamps, in rank order
//	                (foldLen), then Merge over the nodes' folds, in node
//	                order, then Verdicts (verdictLen)
//	every rank      CommitVerdicts, with the same verdicts
//
// The fold keeps, per buffered call, what every cost rule needs: the
// last and second-to-last entry, the first entry, the longest local
// duration, the last and second-to-last exit, the shortest time a rank
// spent since the block call before, and the sum of the exits. The rank
// that left (or came) last is the top of its pair, so the
// second-to-last is the fold's second, not an exclusion in a second
// exchange. Every rank commits the same verdicts, so the ranks' decisions
// agree as long as the folds run in a fixed order on the ranks that run
// them.

// Fold fields: for n buffered calls, each field is a block of n values.
const (
	fEntry1   = iota // the last entry
	fEntry2          // the second-to-last entry (-Inf: one rank)
	fNegEntry        // the first entry, negated
	fDur             // the longest local duration
	fExit1           // the last exit
	fExit2           // the second-to-last exit (-Inf: one rank)
	fGap             // the largest exit of the call before minus this call's entry (-Inf: none)
	fExitSum         // the sum of the exits
	foldFields
)

// stampLen, foldLen and verdictLen are the buffers' lengths for n
// buffered calls: Stamps' (entry, exit, gap per call, then the overhead),
// a fold's (foldFields per call, then the largest overhead and the rank
// count) and Verdicts' (last entry, cost, skew, lag per call, then the
// overhead).
func stampLen(n int) int   { return 3*n + 1 }
func foldLen(n int) int    { return foldFields*n + 2 }
func verdictLen(n int) int { return 4*n + 1 }

// FoldValues bounds the length of a fold (and of Stamps' and Verdicts'
// buffers, which are shorter), for an engine that keeps them in memory
// of its own.
const FoldValues = foldFields*maxSlots + 2

// Stamps returns this rank's part of the commit step by fold, for the
// buffered calls in recording order: their entries, their exits, their
// gaps (under CostSecondExit, a block call's time from its exit of the
// call before to its entry, negated; -Inf otherwise), then NoteOverhead's
// value per buffered call, as a slice of the tuner's own buffer (empty
// when nothing is buffered). Its length is the same on every rank.
func (t *Tuner) Stamps() []float64 {
	n := t.np
	if n == 0 {
		return t.st3[:0]
	}
	s := t.st3[:stampLen(n)]
	for i := 0; i < n; i++ {
		s[i], s[n+i], s[2*n+i] = t.pe[i], t.px[i], math.Inf(-1)
		if t.cfg.Cost == CostSecondExit && t.pb[i] > 1 {
			s[2*n+i] = t.px[i-1] - t.pe[i]
		}
	}
	s[3*n] = t.ovhLocal / float64(n)
	return s
}

// FoldLen is the length of a fold of Stamps' buffers of length stamps.
func FoldLen(stamps int) int {
	if stamps < 1 || (stamps-1)%3 != 0 {
		return 0
	}
	return foldLen((stamps - 1) / 3)
}

// Fold adds one rank's Stamps buffer s to the fold f (length
// FoldLen(len(s))); first starts the fold with it. Folding the same
// buffers in the same order gives the same bits.
func Fold(f, s []float64, first bool) error {
	if FoldLen(len(s)) != len(f) || len(f) == 0 {
		return fmt.Errorf("costmodel: fold of %d stamps into %d values", len(s), len(f))
	}
	n := (len(s) - 1) / 3
	// Field by field over whole blocks: a node's folder runs this once
	// per local rank in every commit step.
	e, x, g := s[:n], s[n:2*n], s[2*n:3*n]
	e1, e2, ne := f[fEntry1*n:][:n], f[fEntry2*n:][:n], f[fNegEntry*n:][:n]
	d, x1, x2 := f[fDur*n:][:n], f[fExit1*n:][:n], f[fExit2*n:][:n]
	fg, sum := f[fGap*n:][:n], f[fExitSum*n:][:n]
	if first {
		for i, v := range e {
			e1[i], e2[i], ne[i], d[i] = v, math.Inf(-1), -v, x[i]-v
		}
		copy(x1, x)
		for i := range x2 {
			x2[i] = math.Inf(-1)
		}
		copy(fg, g)
		copy(sum, x)
	} else {
		for i, v := range e {
			if v > e1[i] {
				e1[i], e2[i] = v, e1[i]
			} else if v > e2[i] {
				e2[i] = v
			}
			ne[i] = max(ne[i], -v)
			d[i] = max(d[i], x[i]-v)
		}
		for i, v := range x {
			if v > x1[i] {
				x1[i], x2[i] = v, x1[i]
			} else if v > x2[i] {
				x2[i] = v
			}
			sum[i] += v
		}
		for i, v := range g {
			fg[i] = max(fg[i], v)
		}
	}
	if first {
		f[foldFields*n], f[foldFields*n+1] = s[3*n], 1
	} else {
		f[foldFields*n] = max(f[foldFields*n], s[3*n])
		f[foldFields*n+1]++
	}
	return nil
}

// Merge adds the fold g (of other ranks) to the fold f. Merging the same
// folds in the same order gives the same bits.
func Merge(f, g []float64) error {
	if len(f) != len(g) || len(f) < 2 || (len(f)-2)%foldFields != 0 {
		return fmt.Errorf("costmodel: merge of folds of %d and %d values", len(f), len(g))
	}
	n := (len(f) - 2) / foldFields
	for i := 0; i < n; i++ {
		top2(f[fEntry1*n+i:], f[fEntry2*n+i:], g[fEntry1*n+i], g[fEntry2*n+i])
		f[fNegEntry*n+i] = max(f[fNegEntry*n+i], g[fNegEntry*n+i])
		f[fDur*n+i] = max(f[fDur*n+i], g[fDur*n+i])
		top2(f[fExit1*n+i:], f[fExit2*n+i:], g[fExit1*n+i], g[fExit2*n+i])
		f[fGap*n+i] = max(f[fGap*n+i], g[fGap*n+i])
		f[fExitSum*n+i] += g[fExitSum*n+i]
	}
	f[foldFields*n] = max(f[foldFields*n], g[foldFields*n])
	f[foldFields*n+1] += g[foldFields*n+1]
	return nil
}

// top2 merges the pair (b1 >= b2) into the pair at a1[0] >= a2[0]: the
// two largest of the four.
func top2(a1, a2 []float64, b1, b2 float64) {
	x1, x2 := a1[0], a2[0]
	if b1 > x1 {
		x1, x2 = b1, max(x1, b2)
	} else {
		x2 = max(x2, b1)
	}
	a1[0], a2[0] = x1, x2
}

// Verdicts turns the complete fold f of every rank's Stamps (for this
// tuner's buffered calls) into what CommitVerdicts takes: per call, its
// last entry, its cost under Config.Cost, its skew (last entry minus
// first) and its lag (a block call's debt to the call before, under
// CostSecondExit), then the largest overhead. It returns a slice of the
// tuner's own buffer.
func (t *Tuner) Verdicts(f []float64) ([]float64, error) {
	n := t.np
	if n == 0 || len(f) != foldLen(n) {
		return nil, fmt.Errorf("costmodel: verdicts of a fold of %d values for %d pending samples (want %d)", len(f), n, foldLen(n))
	}
	ranks := f[foldFields*n+1]
	if !(ranks >= 1) {
		return nil, fmt.Errorf("costmodel: a fold of %g ranks", ranks)
	}
	v := t.vd[:verdictLen(n)]
	for i := 0; i < n; i++ {
		v[i] = f[fEntry1*n+i]
		v[n+i] = foldCost(t.cfg.Cost, f, n, i, ranks)
		v[2*n+i] = f[fEntry1*n+i] + f[fNegEntry*n+i]
		v[3*n+i] = 0
		if g := f[fGap*n+i]; t.cfg.Cost == CostSecondExit && i > 0 && !math.IsInf(g, -1) {
			// Tuner.lag's rule: the call before's second-to-last exit,
			// and the shortest time a rank spent between the calls.
			second := f[fEntry1*n+i-1] + v[n+i-1]
			v[3*n+i] = max(0, min(f[fEntry1*n+i]+g, f[fExit1*n+i-1])-second)
		}
	}
	v[4*n] = f[foldFields*n]
	return v, nil
}

// foldCost is call i's cost under rule c, from the fold f (Tuner.callCost
// from the two exchanges).
func foldCost(c Cost, f []float64, n, i int, ranks float64) float64 {
	last := f[fEntry1*n+i]
	x1, x2 := f[fExit1*n+i], f[fExit2*n+i]
	switch c {
	case CostLastExit:
		return x1 - last
	case CostMeanExit:
		return f[fExitSum*n+i]/ranks - last
	case CostSlowest:
		return f[fDur*n+i]
	case CostSecondExit:
		if math.IsInf(x2, -1) {
			return x1 - last // one rank
		}
		return x2 - last
	case CostPenult:
		exit, entry := x1-last, 0.0
		if !math.IsInf(x2, -1) {
			exit = x2 - last
		}
		if e2 := f[fEntry2*n+i]; !math.IsInf(e2, -1) {
			entry = e2 - last
		}
		return exit - entry
	}
	return 0
}

// CommitVerdicts applies the buffered samples given Verdicts' buffer,
// the same on every rank (the ranks that fold hand it to the others), as
// Commit does given the two exchanges. Only a commit changes decisions.
func (t *Tuner) CommitVerdicts(v []float64) error {
	t.held = false
	n := t.np
	if n == 0 || len(v) != verdictLen(n) {
		return fmt.Errorf("costmodel: commit of %d verdicts for %d pending samples (want %d)", len(v), n, verdictLen(n))
	}
	t.noteAgreedOverhead(v[4*n])
	t.apply(v)
	return nil
}

// VerdictLen is the length of Verdicts' buffer for a fold of length fold.
func VerdictLen(fold int) int {
	if fold < 2 || (fold-2)%foldFields != 0 {
		return 0
	}
	return verdictLen((fold - 2) / foldFields)
}
