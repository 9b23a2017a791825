package bench

import (
	"encoding/csv"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// RegretSeries is the tuner's learning cost for one message size: call by
// call, the time spent beyond the best plan's time.
type RegretSeries struct {
	Bytes int
	Best  float64   // seconds per call of the plan the tuner settled on
	Cum   []float64 // cumulative regret after each call, in units of Best
}

// Regret turns per-call times (max over ranks, seconds) into the cumulative
// regret against best: sum over calls of (t - best) / best. A call faster
// than best (noise) counts as zero, so the curve never decreases.
func Regret(bytes int, times []float64, best float64) RegretSeries {
	r := RegretSeries{Bytes: bytes, Best: best, Cum: make([]float64, len(times))}
	sum := 0.0
	for i, t := range times {
		if best > 0 && t > best {
			sum += (t - best) / best
		}
		r.Cum[i] = sum
	}
	return r
}

// WriteRegretCSV writes one row per (size, call).
func WriteRegretCSV(path string, rs []RegretSeries) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"bytes", "call", "cum_regret_best_calls", "best_us"})
	for _, r := range rs {
		for i, c := range r.Cum {
			_ = w.Write([]string{strconv.Itoa(r.Bytes), strconv.Itoa(i + 1),
				strconv.FormatFloat(c, 'g', 6, 64), strconv.FormatFloat(r.Best*1e6, 'g', 6, 64)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PlotRegret draws the cumulative regret over calls, one line per size.
func PlotRegret(rs []RegretSeries, title, path string) error {
	if len(rs) == 0 {
		return fmt.Errorf("regret plot: no series")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "call"
	p.Y.Label.Text = "cumulative regret (calls of the settled plan)"
	p.Add(plotter.NewGrid())
	var ss []Series
	for _, r := range rs {
		s := Series{Name: results.FormatSize(r.Bytes)}
		for i, c := range r.Cum {
			s.XY = append(s.XY, plotter.XY{X: float64(i + 1), Y: c})
		}
		ss = append(ss, s)
	}
	leg, err := addSeries(p, ss)
	if err != nil {
		return err
	}
	if err := save(p, leg, path); err != nil {
		return fmt.Errorf("regret plot: %w", err)
	}
	return nil
}
