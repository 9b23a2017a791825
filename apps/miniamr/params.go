package miniamr

import (
	"errors"
	"fmt"
	"math"
)

// Params describe a run (the JSON names are miniAMR's option names).
type Params struct {
	N    int `json:"nx"`       // cells per block edge, even [nx = ny = nz]
	Vars int `json:"num_vars"` // variables per cell [num_vars]
	// Root blocks per rank along each axis [init_x, init_y, init_z].
	InitX int `json:"init_x"`
	InitY int `json:"init_y"`
	InitZ int `json:"init_z"`
	// Process grid [npx, npy, npz]; all zero: chosen.
	PX           int `json:"npx"`
	PY           int `json:"npy"`
	PZ           int `json:"npz"`
	MaxLevel     int `json:"num_refine"`    // refinement levels above the root blocks
	Steps        int `json:"num_tsteps"`    // time steps
	Stages       int `json:"stages_per_ts"` // stages per time step
	ChecksumFreq int `json:"checksum_freq"` // checksum every this many stages
	RefineFreq   int `json:"refine_freq"`   // adapt the mesh every this many steps
	// RefineRounds is how many times one adaptation refines / coarsens (a
	// block changes by at most one level per round) [block_change];
	// 0: MaxLevel.
	RefineRounds int      `json:"block_change"`
	MaxBlocks    int      `json:"max_blocks"` // most blocks one rank may hold
	Tol          float64  `json:"tol"`        // allowed relative change of a checksum
	Objects      []Object `json:"objects"`
	// Lattice replaces Objects by one sphere per rank, each moving inside
	// that rank's subdomain: every rank refines alike (a balanced
	// weak-scaling input; this mini-app does not rebalance blocks).
	Lattice bool `json:"lattice"`
}

// Object is a sphere whose surface drives the refinement; it moves by Move
// and grows by Grow every time step, its center bouncing off the walls of
// the box [Lo, Hi] (miniAMR's "bounce" objects; zero Lo and Hi: the unit
// cube).
type Object struct {
	Center [3]float64 `json:"center"`
	Move   [3]float64 `json:"move"`
	Radius float64    `json:"radius"`
	Grow   float64    `json:"grow"`
	Lo     [3]float64 `json:"lo"`
	Hi     [3]float64 `json:"hi"`
}

// DefaultParams are miniAMR's defaults where they fit a small run: 10^3
// cells and 40 variables per block, 20 stages per step, a checksum every 5
// stages, refinement every 5 steps, with 3 levels and two moving spheres.
func DefaultParams() Params {
	return Params{
		N: 10, Vars: 40, InitX: 1, InitY: 1, InitZ: 1, MaxLevel: 3,
		Steps: 20, Stages: 20, ChecksumFreq: 5, RefineFreq: 5, MaxBlocks: 4000,
		Tol: 1e-8, Objects: DefaultObjects(2),
	}
}

// DefaultObjects returns n spheres: the first two fixed (one large entering
// diagonally, one small crossing along x), more from a fixed generator.
func DefaultObjects(n int) []Object {
	objs := []Object{
		{Center: [3]float64{0.15, 0.2, 0.3}, Move: [3]float64{0.02, 0.015, 0.01}, Radius: 0.22, Grow: 0},
		{Center: [3]float64{0.85, 0.6, 0.55}, Move: [3]float64{-0.025, 0, 0.005}, Radius: 0.12, Grow: 0.001},
	}
	if n <= len(objs) {
		return objs[:max(n, 0)]
	}
	s := uint64(0x2545F4914F6CDD1D)
	rnd := func() float64 {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		return float64(s>>11) / float64(1<<53)
	}
	for len(objs) < n {
		var o Object
		for d := range 3 {
			o.Center[d] = 0.1 + 0.8*rnd()
			o.Move[d] = 0.06 * (rnd() - 0.5)
		}
		o.Radius = 0.05 + 0.2*rnd()
		objs = append(objs, o)
	}
	return objs
}

// latticeObjects places one sphere in each subdomain of a px x py x pz
// process grid: radius 0.3 of the subdomain's smallest extent, starting
// off-centre and moving about 3% of the subdomain per step, bouncing inside
// its subdomain. All spheres move alike relative to their subdomains.
func latticeObjects(px, py, pz int) []Object {
	var objs []Object
	ext := [3]float64{1 / float64(px), 1 / float64(py), 1 / float64(pz)}
	small := min(ext[0], ext[1], ext[2])
	for k := 0; k < pz; k++ {
		for j := 0; j < py; j++ {
			for i := 0; i < px; i++ {
				at := [3]int{i, j, k}
				var o Object
				for d := range 3 {
					o.Lo[d] = float64(at[d]) * ext[d]
					o.Hi[d] = float64(at[d]+1) * ext[d]
					o.Center[d] = o.Lo[d] + (0.35+0.05*float64(d))*ext[d]
					o.Move[d] = (0.03 - 0.008*float64(d)) * ext[d]
				}
				o.Radius = 0.3 * small
				objs = append(objs, o)
			}
		}
	}
	return objs
}

func (p *Params) validate() error {
	switch {
	case p.N < 2 || p.N%2 != 0:
		return fmt.Errorf("miniamr: block size %d: want an even number >= 2", p.N)
	case p.Vars < 1:
		return fmt.Errorf("miniamr: %d variables", p.Vars)
	case p.InitX < 1 || p.InitY < 1 || p.InitZ < 1:
		return fmt.Errorf("miniamr: %dx%dx%d root blocks per rank", p.InitX, p.InitY, p.InitZ)
	case p.MaxLevel < 0 || p.MaxLevel > 10:
		return fmt.Errorf("miniamr: %d refinement levels (0..10)", p.MaxLevel)
	case p.Steps < 0 || p.Stages < 1 || p.ChecksumFreq < 0 || p.RefineFreq < 0 || p.RefineRounds < 0:
		return errors.New("miniamr: negative steps, stages or frequencies")
	case p.MaxBlocks < 1:
		return fmt.Errorf("miniamr: max blocks %d", p.MaxBlocks)
	case !(p.Tol > 0) || math.IsInf(p.Tol, 0):
		return fmt.Errorf("miniamr: checksum tolerance %v", p.Tol)
	}
	if p.RefineRounds == 0 {
		p.RefineRounds = p.MaxLevel
	}
	return nil
}

// move advances the object by one time step, bouncing off the walls.
func (o *Object) move() {
	if o.Hi == [3]float64{} {
		o.Hi = [3]float64{1, 1, 1}
	}
	for d := range 3 {
		c := o.Center[d] + o.Move[d]
		if c < o.Lo[d] || c > o.Hi[d] {
			o.Move[d] = -o.Move[d]
			c = o.Center[d] + o.Move[d]
		}
		o.Center[d] = c
	}
	o.Radius += o.Grow
}

// crossesSurface reports whether the sphere's surface passes through the
// box [lo, hi].
func (o *Object) crossesSurface(lo, hi [3]float64) bool {
	var dmin, dmax float64
	for d := range 3 {
		c := o.Center[d]
		near := 0.0
		if c < lo[d] {
			near = lo[d] - c
		} else if c > hi[d] {
			near = c - hi[d]
		}
		far := math.Max(math.Abs(c-lo[d]), math.Abs(hi[d]-c))
		dmin += near * near
		dmax += far * far
	}
	r2 := o.Radius * o.Radius
	return dmin <= r2 && r2 <= dmax
}
