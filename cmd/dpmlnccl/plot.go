package main

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/nccl"
)

// sizeTicks labels a log2 byte axis at every other power of two.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log2(math.Max(lo, 1))); e <= math.Ceil(math.Log2(math.Max(hi, 1))); e++ {
		t := plot.Tick{Value: math.Exp2(e)}
		if int(e)%2 == 0 {
			t.Label = config.FormatBytes(int64(math.Exp2(e)))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

type series struct {
	name  string
	xy    plotter.XYs
	color color.Color
	width float64
	dash  bool
}

func addLines(p *plot.Plot, ss []series) error {
	for i, s := range ss {
		if len(s.xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.name, err)
		}
		c := s.color
		if c == nil {
			c = plotutil.Color(i)
		}
		l.LineStyle.Color, pts.Color = c, c
		pts.Shape = plotutil.Shape(i)
		if s.width > 0 {
			l.LineStyle.Width = vg.Points(s.width)
		}
		if s.dash {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return nil
}

// plotAtlas draws the channel atlas: per size, the channel count of the
// fastest fixed per-call answer, of the fastest communicator-wide count
// (nccl@N), the table's answer (0: NCCL's own) and the model's.
func plotAtlas(path string, sweeps []*nccl.Sweep, picks []nccl.Pick, ncclVersion string) error {
	perCall := bestPerSize(sweeps, func(r *nccl.SweepRow) (int, bool) {
		d, ok := r.Fixed()
		return d.Channels, ok && d.Channels > 0 && r.Coll == "allreduce"
	})
	perComm := bestPerSize(sweeps, func(r *nccl.SweepRow) (int, bool) {
		if r.Policy != "nccl" || r.Coll != "allreduce" {
			return 0, false
		}
		var n int
		if _, err := fmt.Sscanf(r.Comm, "%d", &n); err != nil || fmt.Sprint(n) != r.Comm {
			return 0, false
		}
		return n, true
	})
	mk := func(m map[int64]int) plotter.XYs {
		var xy plotter.XYs
		for _, n := range sortedSizes(m) {
			xy = append(xy, plotter.XY{X: float64(n), Y: float64(m[n])})
		}
		return xy
	}
	table := map[int64]int{}
	for _, pk := range picks {
		if pk.Coll != "" && pk.Coll != "allreduce" {
			continue
		}
		for _, n := range pk.Sizes {
			table[n] = pk.Choice.Channels
		}
	}
	lay := nccl.Layout{Ranks: 2, Nodes: 1}
	if len(sweeps) > 0 && len(sweeps[0].Rows) > 0 {
		lay = nccl.Layout{Ranks: sweeps[0].Rows[0].Ranks, Nodes: sweeps[0].Rows[0].Nodes}
	}
	model := map[int64]int{}
	if p, err := nccl.New(nccl.Settings{Mode: nccl.ModeModel}, lay); err == nil {
		for n := range table {
			model[n] = p.Decide(nccl.AllReduce, uint64(n)).Channels
		}
		for n := range perCall {
			model[n] = p.Decide(nccl.AllReduce, uint64(n)).Channels
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("channel atlas: allreduce, %d GPUs, %s", lay.Ranks, ncclVersion)
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = "channels (table: 0 = NCCL's own choice)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	err := addLines(p, []series{
		{name: "fastest per-call count (C@comm, plugin answer)", xy: mk(perCall), width: 2},
		{name: "fastest communicator count (nccl@N)", xy: mk(perComm)},
		{name: "table answer", xy: mk(table), color: color.Black, width: 1.5, dash: true},
		{name: "built-in model", xy: mk(model), color: color.Gray{Y: 128}},
	})
	if err != nil {
		return err
	}
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}

// plotBusBW draws bus bandwidth against size, one line per variant.
func plotBusBW(path string, sw *nccl.Sweep) error {
	p := plot.New()
	m := sw.Meta
	p.Title.Text = fmt.Sprintf("allreduce bus bandwidth, %s x %s, NCCL %s", m["gpus"], m["gpu0"], nccl.VersionString(m["nccl_version"]))
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = "bus bandwidth (GB/s, median)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	var ss []series
	for _, v := range sw.Variants() {
		s := series{name: v}
		switch {
		case v == nccl.DefaultVariant:
			s.color, s.width = color.Black, 2
		case strings.HasPrefix(v, "plugin@"):
			s.color, s.width, s.dash = color.RGBA{R: 230, G: 120, A: 255}, 2, true
		}
		for _, n := range sw.Sizes() {
			if r, ok := sw.Row(v, n); ok && r.Check != "fail" && r.BusBW > 0 {
				s.xy = append(s.xy, plotter.XY{X: float64(n), Y: r.BusBW})
			}
		}
		ss = append(ss, s)
	}
	if err := addLines(p, ss); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 6*vg.Inch, path)
}
