package costmodel

import (
	"fmt"
	"math"
	"sort"
)

// Concurrency is the inter-node concurrency curve of the paper's Fig. 1:
// M(p, x), the aggregate throughput of p pairs sending x-byte messages at
// once relative to one pair. p pairs then each take p*t(x)/M(p, x), where
// t(x) is one pair's time alone. Zone A (small x, message-rate bound):
// M ~ p; zone C (large x, bandwidth bound): M ~ 1; zone B in between.
//
// It is a small table, interpolated linearly in (log2 x, log2 p): rows are
// message sizes, columns pair counts > 1. One pair is always 1. Outside the
// table the nearest row is used; beyond the last column M stays at the last
// column's value (no more concurrency). M is clamped to [MinMult, p]. The
// empty table means M = 1 (no concurrency benefit).
type Concurrency struct {
	Log2Bytes []float64   `json:"log2_bytes"` // ascending log2 of the message size per pair
	Pairs     []float64   `json:"pairs"`      // ascending pair counts, each > 1
	Mult      [][]float64 `json:"mult"`       // Mult[i][j]: M(Pairs[j], 2^Log2Bytes[i])
}

// MinMult is the smallest multiplier the curve returns: concurrent pairs
// may slow each other down, but not without bound.
const MinMult = 0.25

// ZoneCurve builds a three-zone curve: M = min(p, maxMult) for messages up
// to zoneAEnd bytes, M = 1 from zoneCStart bytes on, linear in log2 size in
// between (zone B). Pair columns are 2, 4, ..., 64.
func ZoneCurve(zoneAEnd, zoneCStart int, maxMult float64) Concurrency {
	zoneAEnd, zoneCStart = max(zoneAEnd, 1), max(zoneCStart, zoneAEnd+1)
	c := Concurrency{
		Log2Bytes: []float64{math.Log2(float64(zoneAEnd)), math.Log2(float64(zoneCStart))},
		Pairs:     []float64{2, 4, 8, 16, 32, 64},
	}
	c.Mult = make([][]float64, 2)
	for i := range c.Mult {
		c.Mult[i] = make([]float64, len(c.Pairs))
		for j, p := range c.Pairs {
			if i == 0 {
				c.Mult[i][j] = math.Min(p, math.Max(maxMult, 1))
			} else {
				c.Mult[i][j] = 1
			}
		}
	}
	return c
}

// Validate checks the table's shape and order.
func (c *Concurrency) Validate() error {
	if len(c.Log2Bytes) == 0 && len(c.Pairs) == 0 && len(c.Mult) == 0 {
		return nil
	}
	if len(c.Mult) != len(c.Log2Bytes) || len(c.Pairs) == 0 {
		return fmt.Errorf("costmodel: concurrency table has %d size rows for %d sizes and %d pair columns", len(c.Mult), len(c.Log2Bytes), len(c.Pairs))
	}
	if !sort.Float64sAreSorted(c.Log2Bytes) || !sort.Float64sAreSorted(c.Pairs) || c.Pairs[0] <= 1 {
		return fmt.Errorf("costmodel: concurrency axes must ascend and pairs exceed 1")
	}
	for i, r := range c.Mult {
		if len(r) != len(c.Pairs) {
			return fmt.Errorf("costmodel: concurrency row %d has %d values for %d pair columns", i, len(r), len(c.Pairs))
		}
		for _, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return fmt.Errorf("costmodel: concurrency row %d has multiplier %g", i, v)
			}
		}
	}
	return nil
}

// bracket returns i, w such that x lies between xs[i] and xs[i+1] with
// weight w on xs[i+1] (clamped at the ends).
func bracket(xs []float64, x float64) (int, float64) {
	n := len(xs)
	if n == 1 || x <= xs[0] {
		return 0, 0
	}
	if x >= xs[n-1] {
		return n - 2, 1
	}
	i := sort.SearchFloat64s(xs, x) - 1 // xs[i] < x <= xs[i+1]
	i = max(i, 0)
	return i, (x - xs[i]) / (xs[i+1] - xs[i])
}

// row interpolates row r of the table at pair count p (> 1), in log2 p,
// with the implicit column M(1) = 1.
func (c *Concurrency) row(r int, lp float64) float64 {
	ps := c.Pairs
	if lp >= math.Log2(ps[len(ps)-1]) {
		return c.Mult[r][len(ps)-1]
	}
	lo, vlo := 0.0, 1.0
	for j, p := range ps {
		lq := math.Log2(p)
		if lp <= lq {
			w := (lp - lo) / (lq - lo)
			return vlo + w*(c.Mult[r][j]-vlo)
		}
		lo, vlo = lq, c.Mult[r][j]
	}
	return vlo
}

// Multiplier returns M(pairs, bytes): >= MinMult and <= pairs.
func (c *Concurrency) Multiplier(pairs, bytes float64) float64 {
	if pairs <= 1 {
		return 1
	}
	if len(c.Mult) == 0 || len(c.Pairs) == 0 {
		return 1
	}
	lp := math.Log2(pairs)
	lx := math.Log2(math.Max(bytes, 1))
	var v float64
	if len(c.Log2Bytes) == 1 {
		v = c.row(0, lp)
	} else {
		i, w := bracket(c.Log2Bytes, lx)
		v = (1-w)*c.row(i, lp) + w*c.row(i+1, lp)
	}
	return math.Min(math.Max(v, MinMult), pairs)
}

// Clone returns a deep copy.
func (c Concurrency) Clone() Concurrency {
	d := Concurrency{
		Log2Bytes: append([]float64(nil), c.Log2Bytes...),
		Pairs:     append([]float64(nil), c.Pairs...),
	}
	for _, r := range c.Mult {
		d.Mult = append(d.Mult, append([]float64(nil), r...))
	}
	return d
}
