package bench

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one line of a plot: points (x = message bytes, y = value).
type Series struct {
	Name string
	XY   plotter.XYs
}

// LatencySeries returns the lines of the latency plot: native, one line per
// fixed leader count l (at every size the best median over the pipeline
// depths k run with that l), and auto. Y is the median latency in us.
func LatencySeries(rep *Report) []Series {
	var out []Series
	add := func(name string, pick func(bytes int) (Result, bool)) {
		s := Series{Name: name}
		for _, b := range rep.Sizes() {
			if r, ok := pick(b); ok && r.US.Median > 0 {
				s.XY = append(s.XY, plotter.XY{X: float64(b), Y: r.US.Median})
			}
		}
		if len(s.XY) > 0 {
			out = append(out, s)
		}
	}
	add("native", func(b int) (Result, bool) { return find(rep.Results, b, VariantNative) })
	for _, l := range leaderValues(rep.Results) {
		l := l
		add(fmt.Sprintf("dpml l=%d", l), func(b int) (Result, bool) {
			var best Result
			found := false
			for _, r := range rep.Results {
				if r.Bytes == b && r.Variant == VariantDPML && r.Leaders == l && r.OK() && (!found || r.US.Median < best.US.Median) {
					best, found = r, true
				}
			}
			return best, found
		})
	}
	add("dpml auto", func(b int) (Result, bool) { return find(rep.Results, b, VariantAuto) })
	return out
}

// SpeedupSeries returns the lines of the speedup plot: native median over
// the best fixed plan's median at each size, and over auto's median.
func SpeedupSeries(rep *Report) []Series {
	best := Series{Name: "best fixed (l,k)"}
	auto := Series{Name: "dpml auto"}
	for _, b := range rep.Sizes() {
		native, ok := rep.Native(b)
		if !ok {
			continue
		}
		if r, ok := BestFixed(rep.Results, b); ok {
			if s := Speedup(r, native); !math.IsNaN(s) && !math.IsInf(s, 0) {
				best.XY = append(best.XY, plotter.XY{X: float64(b), Y: s})
			}
		}
		if r, ok := find(rep.Results, b, VariantAuto); ok {
			if s := Speedup(r, native); !math.IsNaN(s) && !math.IsInf(s, 0) {
				auto.XY = append(auto.XY, plotter.XY{X: float64(b), Y: s})
			}
		}
	}
	var out []Series
	for _, s := range []Series{best, auto} {
		if len(s.XY) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func leaderValues(rs []Result) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range rs {
		if r.Variant == VariantDPML && !seen[r.Leaders] {
			seen[r.Leaders] = true
			out = append(out, r.Leaders)
		}
	}
	sort.Ints(out)
	return out
}

// sizeTicks labels a log2 byte axis at powers of 4 (4, 16, 64, 256, 1K...)
// with minor ticks at the other powers of two.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	start := math.Floor(math.Log2(math.Max(lo, 1)))
	for e := start; e <= math.Ceil(math.Log2(math.Max(hi, 1))); e++ {
		v := math.Exp2(e)
		t := plot.Tick{Value: v}
		if int(e)%2 == 0 || hi/lo < 64 {
			t.Label = FormatSize(int(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func title(rep *Report, what string) string {
	m := rep.Meta
	return fmt.Sprintf("%s: %d node(s) x %d ranks, %s %s", what, m.Nodes, m.PPN, m.Type, m.Op)
}

func newPlot(rep *Report, what, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title(rep, what)
	p.X.Label.Text = "message size (bytes per rank)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// autoColor marks the engine's own choice in every plot.
var autoColor = color.RGBA{R: 230, G: 120, B: 0, A: 255}

func addSeries(p *plot.Plot, ss []Series) error {
	next := 0 // palette index of the next plain line
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.XY)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		var c color.Color
		switch s.Name {
		case "native":
			c = color.Black
			l.LineStyle.Width = vg.Points(2)
		case "dpml auto":
			c = autoColor
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			l.LineStyle.Width = vg.Points(1.5)
		default:
			c = plotutil.Color(next)
			next++
		}
		l.LineStyle.Color = c
		pts.Color = c
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	return nil
}

// PlotLatency draws median latency vs size, log-log, one line per leader
// count plus native and auto, and saves it (format from the extension).
func PlotLatency(rep *Report, path string) error {
	ss := LatencySeries(rep)
	if len(ss) == 0 {
		return fmt.Errorf("latency plot: no measured points")
	}
	p := newPlot(rep, "Allreduce latency (median of max over ranks)", "latency (us)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	if err := addSeries(p, ss); err != nil {
		return err
	}
	if err := p.Save(8*vg.Inch, 5.5*vg.Inch, path); err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	return nil
}

// PlotSpeedup draws native median / dpml median vs size for the best fixed
// plan and for auto, with the native level 1 as a reference line.
func PlotSpeedup(rep *Report, path string) error {
	ss := SpeedupSeries(rep)
	if len(ss) == 0 {
		return fmt.Errorf("speedup plot: no dpml points with a native baseline")
	}
	p := newPlot(rep, "DPML speedup over native MPI_Allreduce", "speedup (native median / dpml median)")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, xy := range s.XY {
			lo, hi = math.Min(lo, xy.X), math.Max(hi, xy.X)
		}
	}
	ref, err := plotter.NewLine(plotter.XYs{{X: lo, Y: 1}, {X: hi, Y: 1}})
	if err != nil {
		return fmt.Errorf("speedup plot: %w", err)
	}
	ref.LineStyle.Color = color.Gray{Y: 96}
	ref.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(ref)
	p.Legend.Add("native = 1", ref)
	if err := addSeries(p, ss); err != nil {
		return err
	}
	p.Y.Min = math.Min(p.Y.Min, 0)
	if err := p.Save(8*vg.Inch, 5.5*vg.Inch, path); err != nil {
		return fmt.Errorf("speedup plot: %w", err)
	}
	return nil
}

// WritePlots writes latency.png and speedup.png into dir and returns the
// paths written. A plot without data is skipped, not an error, unless
// neither can be drawn.
func WritePlots(dir string, rep *Report) ([]string, error) {
	var written []string
	var errs []error
	for _, pl := range []struct {
		name string
		draw func(*Report, string) error
	}{{LatencyPNG, PlotLatency}, {SpeedupPNG, PlotSpeedup}} {
		path := filepath.Join(dir, pl.name)
		if err := pl.draw(rep, path); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, path)
	}
	if len(written) == 0 && len(errs) > 0 {
		return nil, errs[0]
	}
	return written, nil
}
