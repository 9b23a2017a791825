package nccl

import (
	"math"

	"github.com/dpmlgo/dpml/costmodel"
)

// The channel model is the cost model of package costmodel read with NCCL
// meanings (doc.go, "The channel model"): a channel is a leader, the
// bytes one channel moves are a leader's part, and the concurrency curve
// M(c, x) says how much throughput c channels moving x bytes each get
// together relative to one. Only these fields of costmodel.Model are used:
//
//	a        startup of one step of one channel (seconds)
//	a_shm    cost of each channel used: launching and synchronising its block (seconds)
//	b        seconds per byte of one channel running alone
//	concurrency  M(c, x)
//
// A table may carry its own (costmodel.Table.Model); the plugin uses it for
// collectives and sizes its entries do not cover.

// DefaultModel returns the placeholder channel model: one NVLink-connected
// node of H200 GPUs, anchored to the one measurement there (two GPUs,
// allreduce of 1 GiB, about 330 GB/s bus bandwidth by NCCL's default,
// 344 GB/s with 32 channels). A channel alone moves about 20 GB/s; up to
// 64 KiB per channel the channels do not contend (zone A: M = c); from
// 2 MiB per channel they share the links, which saturate at about 17
// channels' worth (zone C). Replace it by a measured table (dpmlnccl table).
func DefaultModel() costmodel.Model {
	return costmodel.Model{
		A:  1e-6,
		Ap: 0.25e-6,
		B:  1 / 20e9,
		Conc: costmodel.Concurrency{
			Log2Bytes: []float64{16, 21},
			Pairs:     []float64{2, 4, 8, 16, 32, 64},
			Mult: [][]float64{
				{2, 4, 8, 16, 32, 64},
				{2, 4, 8, 15, 17, 17},
			},
		},
	}
}

// DefaultCandidates are the channel counts the model chooses among.
var DefaultCandidates = []int{1, 2, 4, 8, 12, 16, 24, 32}

// traffic returns the bytes each rank sends in a ring implementation of
// collective c on n bytes over r ranks (NCCL's bus-bandwidth factors) and
// the number of ring steps.
func traffic(c Coll, n float64, r int) (bytes float64, steps int) {
	if r <= 1 {
		return 0, 0
	}
	fr := float64(r)
	switch c {
	case AllReduce:
		return 2 * (fr - 1) / fr * n, 2 * (r - 1)
	case AllGather, ReduceScatter:
		return (fr - 1) / fr * n, r - 1
	default: // Broadcast, Reduce: a pipeline along the ring
		return n, r - 1
	}
}

// Predict returns the model's seconds for collective c on n bytes over lay
// with ch channels:
//
//	T = steps*a + ch*a_shm + t*b / M(ch, t/ch),   t = bytes each rank sends
//
// (costmodel's inter-node term p*(a + x*b)/M(p, x) with the channels as the
// p concurrent pairs; the startups of concurrent channels overlap, and each
// channel used costs a_shm).
func Predict(m *costmodel.Model, c Coll, n float64, lay Layout, ch int) float64 {
	ch = max(ch, 1)
	t, steps := traffic(c, n, lay.Ranks)
	mult := m.Conc.Multiplier(float64(ch), t/float64(ch))
	return float64(steps)*m.A + float64(ch)*m.Ap + t*m.B/mult
}

// BestChannels returns the candidate with the smallest predicted time (the
// smaller count on ties) and that time.
func BestChannels(m *costmodel.Model, c Coll, n float64, lay Layout, cands []int) (int, float64) {
	best, bt := 0, math.Inf(1)
	for _, ch := range cands {
		if ch < 1 || ch > MaxChannels {
			continue
		}
		if t := Predict(m, c, n, lay, ch); t < bt {
			best, bt = ch, t
		}
	}
	return best, bt
}

// bucketBytes is the size the model prices for bucket b: its geometric
// middle, as costmodel.Key.Bytes (in float64: bucket 63 overflows an int).
func bucketBytes(b int) float64 { return math.Exp2(float64(b) + 0.5) }
