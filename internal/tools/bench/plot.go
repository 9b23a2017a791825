package bench

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a plot: points (x = message bytes, y = value) and,
// per point, the spread around it (Lo, Hi: the band drawn behind the line).
type Series struct {
	Name   string
	XY     plotter.XYs
	Lo, Hi []float64
}

func (s *Series) add(x, y, lo, hi float64) {
	s.XY = append(s.XY, plotter.XY{X: x, Y: y})
	s.Lo, s.Hi = append(s.Lo, lo), append(s.Hi, hi)
}

// quartiles returns the 25th and 75th percentiles of a result's samples:
// from the samples themselves when the report holds them (-samples), else
// from the summary, which was computed from the same samples.
func quartiles(r results.Result) (p25, p75 float64) {
	if len(r.SamplesUS) > 0 {
		return Quantile(r.SamplesUS, 0.25), Quantile(r.SamplesUS, 0.75)
	}
	return r.US.P25, r.US.P75
}

// LatencySeries returns the lines of the latency plot: native, one line per
// fixed leader count l (at every size the best median over the pipeline
// depths k run with that l), and auto. Y is the median time per call in
// us, the band its samples' interquartile range.
func LatencySeries(rep *results.Report) []Series {
	var out []Series
	add := func(name string, pick func(bytes int) (results.Result, bool)) {
		s := Series{Name: name}
		for _, b := range rep.Sizes() {
			if r, ok := pick(b); ok && r.US.Median > 0 {
				lo, hi := quartiles(r)
				s.add(float64(b), r.US.Median, lo, hi)
			}
		}
		if len(s.XY) > 0 {
			out = append(out, s)
		}
	}
	add("native", func(b int) (results.Result, bool) { return find(rep.Results, b, results.VariantNative) })
	for _, l := range leaderValues(rep.Results) {
		add(fmt.Sprintf("dpml l=%d", l), func(b int) (results.Result, bool) {
			var best results.Result
			found := false
			for _, r := range rep.Results {
				if r.Bytes == b && r.Variant == results.VariantDPML && r.Leaders == l && r.OK() && (!found || r.US.Median < best.US.Median) {
					best, found = r, true
				}
			}
			return best, found
		})
	}
	add("dpml auto", func(b int) (results.Result, bool) { return find(rep.Results, b, results.VariantAuto) })
	return out
}

// RatioSeries returns the lines of the ratio plot: the best fixed plan's
// median and auto's over the native median at each size (DPML ÷ MPI
// library, lower is better). The band is the variant's interquartile range
// over the same native median.
func RatioSeries(rep *results.Report) []Series {
	best := Series{Name: "best fixed (l,k)"}
	auto := Series{Name: "dpml auto"}
	for _, b := range rep.Sizes() {
		native, ok := rep.Native(b)
		if !ok {
			continue
		}
		add := func(s *Series, r results.Result, have bool) {
			if !have {
				return
			}
			if x := results.Ratio(r, native); !math.IsNaN(x) && !math.IsInf(x, 0) && x > 0 {
				lo, hi := quartiles(r)
				s.add(float64(b), x, lo/native.US.Median, hi/native.US.Median)
			}
		}
		r, have := BestFixed(rep.Results, b)
		add(&best, r, have)
		r, have = find(rep.Results, b, results.VariantAuto)
		add(&auto, r, have)
	}
	var out []Series
	for _, s := range []Series{best, auto} {
		if len(s.XY) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func leaderValues(rs []results.Result) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range rs {
		if r.Variant == results.VariantDPML && !seen[r.Leaders] {
			seen[r.Leaders] = true
			out = append(out, r.Leaders)
		}
	}
	sort.Ints(out)
	return out
}

// HumanBytes writes a byte count in binary units: "4 B", "1 KiB",
// "1.5 KiB", "64 MiB".
func HumanBytes(n int) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[u]
}

// sizeTicks puts the x axis's ticks at the measured sizes, labelled in
// binary units; with many sizes only every few carry a label, so that the
// labels do not overlap.
type sizeTicks struct{ sizes []int }

// maxSizeLabels is the most labelled ticks an 8-inch axis holds legibly.
const maxSizeLabels = 10

func (t sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var in []int
	for _, s := range t.sizes {
		if v := float64(s); v >= lo && v <= hi {
			in = append(in, s)
		}
	}
	every := (len(in) + maxSizeLabels - 1) / maxSizeLabels
	ticks := make([]plot.Tick, 0, len(in))
	for i, s := range in {
		tk := plot.Tick{Value: float64(s)}
		if every <= 1 || i%every == 0 {
			tk.Label = HumanBytes(s)
		}
		ticks = append(ticks, tk)
	}
	return ticks
}

// ClientLabel names the program that measured a report: the Go API
// (dpmlbench) or a C program through libdpml.so (dpmlbench-c).
func ClientLabel(m results.Meta) string {
	if m.Client == "c" {
		return "C client (dpmlbench-c, MPI_Allreduce through libdpml.so)"
	}
	return "Go client (dpmlbench, package dpml)"
}

// machineLabel describes the machine: the recorded CPU model, else the
// first host and its CPU count.
func machineLabel(m results.Meta) string {
	if m.Machine != "" {
		return m.Machine
	}
	host := "unknown host"
	if len(m.Hosts) > 0 {
		host = m.Hosts[0]
	}
	if m.HostCPUs > 0 {
		return fmt.Sprintf("%s, %d CPUs", host, m.HostCPUs)
	}
	return host
}

// PlotTitle is a plot's title: what it shows, then the client, pattern,
// layout, type and op, then the machine and the commit, so a plot read on
// its own says what was measured where.
func PlotTitle(m results.Meta, what string) string {
	pattern := m.Pattern
	if pattern == "" {
		pattern = results.PatternBarrier
	}
	layout := fmt.Sprintf("%d node(s) x %d ranks", m.Nodes, m.PPN)
	if m.PPNMax > m.PPN {
		layout = fmt.Sprintf("%d node(s) x %d-%d ranks", m.Nodes, m.PPN, m.PPNMax)
	}
	commit := m.GitCommit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		commit = "unknown"
	}
	if m.GitDirty {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s\n%s, pattern %s, %s, %s %s\nmachine: %s, commit %s",
		what, ClientLabel(m), pattern, layout, m.Type, m.Op, machineLabel(m), commit)
}

func newPlot(rep *results.Report, what, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = PlotTitle(rep.Meta, what)
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = "message size per rank"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{sizes: rep.Sizes()}
	p.Add(plotter.NewGrid())
	return p
}

// autoColor marks the engine's own choice in every plot.
var autoColor = color.RGBA{R: 230, G: 120, B: 0, A: 255}

// addSeries draws each series' band (translucent, behind the lines), then
// its line and points, and returns the legend entries.
func addSeries(p *plot.Plot, ss []Series) (plot.Legend, error) {
	leg := plot.NewLegend()
	next := 0 // palette index of the next plain line
	var lines []plot.Plotter
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.XY)
		if err != nil {
			return leg, fmt.Errorf("plot %s: %w", s.Name, err)
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
		if band, err := bandOf(s, c); err == nil {
			p.Add(band)
		} else if err != errNoBand {
			return leg, fmt.Errorf("plot %s: %w", s.Name, err)
		}
		lines = append(lines, l, pts)
		leg.Add(s.Name, l, pts)
	}
	p.Add(lines...)
	return leg, nil
}

var errNoBand = fmt.Errorf("no spread")

// bandOf is the polygon from the series' Lo values left to right and back
// along its Hi values, in the series' colour at low opacity.
func bandOf(s Series, c color.Color) (*plotter.Polygon, error) {
	if len(s.Lo) != len(s.XY) || len(s.XY) < 2 {
		return nil, errNoBand
	}
	var ring plotter.XYs
	spread := false
	for i, xy := range s.XY {
		if !(s.Lo[i] > 0) || !(s.Hi[i] >= s.Lo[i]) {
			return nil, errNoBand // a log axis cannot draw it
		}
		spread = spread || s.Hi[i] > s.Lo[i]
		ring = append(ring, plotter.XY{X: xy.X, Y: s.Lo[i]})
	}
	if !spread {
		return nil, errNoBand
	}
	for i := len(s.XY) - 1; i >= 0; i-- {
		ring = append(ring, plotter.XY{X: s.XY[i].X, Y: s.Hi[i]})
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil, err
	}
	r, g, b, _ := c.RGBA()
	poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 48}
	poly.LineStyle.Width = 0
	return poly, nil
}

// Plot size: the data area on the left, the legend in a strip on its
// right, outside the data.
const (
	plotWidth   = 9 * vg.Inch
	plotHeight  = 5.5 * vg.Inch
	legendStrip = 1.9 * vg.Inch
)

// save draws p with the legend to the right of it, outside the data area,
// into path (png or svg, from the extension).
func save(p *plot.Plot, leg plot.Legend, path string) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	cw, err := draw.NewFormattedCanvas(plotWidth, plotHeight, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	p.Draw(draw.Crop(dc, 0, -legendStrip, 0, 0))
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(10)
	// Top-aligned with the data area: below the title.
	title := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	leg.Draw(draw.Crop(dc, plotWidth-legendStrip+vg.Points(8), 0, 0, -title))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PlotLatency draws the median time per call against size, log-log, one
// line per leader count plus native and auto, each with its samples'
// interquartile range as a band, and saves it (format from the extension).
func PlotLatency(rep *results.Report, path string) error {
	ss := LatencySeries(rep)
	if len(ss) == 0 {
		return fmt.Errorf("latency plot: no measured points")
	}
	p := newPlot(rep, "MPI_Allreduce time per call: median, band = interquartile range of the samples", "time per call (us)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	leg, err := addSeries(p, ss)
	if err != nil {
		return err
	}
	if err := save(p, leg, path); err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	return nil
}

// PlotRatio draws DPML ÷ MPI library (medians; lower is better) against
// size for the best fixed plan and for auto, with the MPI library's level
// 1 as a reference line.
func PlotRatio(rep *results.Report, path string) error {
	ss := RatioSeries(rep)
	if len(ss) == 0 {
		return fmt.Errorf("ratio plot: no dpml points with an MPI library baseline")
	}
	p := newPlot(rep, "DPML ÷ MPI library (median time per call; lower is better; band = the variant's IQR)", "ratio DPML ÷ MPI library")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, xy := range s.XY {
			lo, hi = math.Min(lo, xy.X), math.Max(hi, xy.X)
		}
	}
	ref, err := plotter.NewLine(plotter.XYs{{X: lo, Y: 1}, {X: hi, Y: 1}})
	if err != nil {
		return fmt.Errorf("ratio plot: %w", err)
	}
	ref.LineStyle.Color = color.Gray{Y: 96}
	ref.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(ref)
	leg, err := addSeries(p, ss)
	if err != nil {
		return err
	}
	leg.Add("MPI library = 1", ref)
	p.Y.Min = math.Min(p.Y.Min, 0)
	if err := save(p, leg, path); err != nil {
		return fmt.Errorf("ratio plot: %w", err)
	}
	return nil
}

// WritePlots writes latency.png and ratio.png into dir and returns the
// paths written. A plot without data is skipped, not an error, unless
// neither can be drawn.
func WritePlots(dir string, rep *results.Report) ([]string, error) {
	var written []string
	var errs []error
	for _, pl := range []struct {
		name string
		draw func(*results.Report, string) error
	}{{LatencyPNG, PlotLatency}, {RatioPNG, PlotRatio}} {
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
