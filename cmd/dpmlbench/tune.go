package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/costmodel/offline"
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/mpi"
)

// cmdCalibrate fits the cost model to sweeps (no MPI): dpmlbench run
// -phases over fixed plans and native writes the rows it needs.
func cmdCalibrate(args []string) error {
	fs := newFlagSet("calibrate", "dpmlbench calibrate -in results.csv[,more.csv] [-eval other.csv,...] -out table.json")
	in := fs.String("in", "", "comma-separated results.csv files of `dpmlbench run -phases` (required); results.json files add their fixed tree plans on one node (the tree's parameters)")
	eval := fs.String("eval", "", "report predictions and the model's picks on these results.csv files instead of the fitted ones (out of sample)")
	out := fs.String("out", "", "write a tuning table holding the fitted model here (default: print only)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return usagef("-in is required")
	}
	s, err := readSamples(*in)
	if err != nil {
		return err
	}
	m, err := offline.Calibrate(s)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	es, what := s, "the fitted sweeps"
	if *eval != "" {
		if es, err = readSamples(*eval); err != nil {
			return err
		}
		what = *eval + " (out of sample)"
	}
	fmt.Printf("fitted model:\n%s\n\npredicted vs measured, %s:\n%s\n", b, what, offline.Compare(&m, es))
	fmt.Printf("the model alone, choosing among the measured plans of each size of %s:\n%s\n", what, offline.PicksString(offline.Picks(&m, es)))
	if *out == "" {
		return nil
	}
	tb := costmodel.Table{Schema: costmodel.SchemaVersion, Model: &m,
		Provenance: costmodel.Provenance{Command: strings.Join(os.Args, " "), Note: "model calibrated from " + *in}}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := tb.Write(f); err != nil {
		f.Close()
		return err
	}
	fmt.Println("wrote", *out)
	return f.Close()
}

// readSamples reads comma-separated results.csv files into calibration
// samples.
func readSamples(list string) (offline.Samples, error) {
	var rows []offline.BenchRow
	var trees []offline.TreeSample
	for _, p := range strings.Split(list, ",") {
		if strings.HasSuffix(p, ".json") {
			// A results.json (dpmlbench or the C client): its fixed tree
			// plans on one node fit the tree's parameters.
			rep, err := results.ReadJSONFile(p)
			if err != nil {
				return offline.Samples{}, fmt.Errorf("%s: %w", p, err)
			}
			trees = append(trees, offline.TreeSamplesFromReport(rep)...)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return offline.Samples{}, err
		}
		r, err := offline.ReadBenchCSV(f)
		f.Close()
		if err != nil {
			return offline.Samples{}, fmt.Errorf("%s: %w", p, err)
		}
		rows = append(rows, r...)
	}
	s := offline.SamplesFromBench(rows)
	s.Tree = trees
	return s, nil
}

// cmdTune runs the engine's tuner on every size until each size's key
// settles, then saves what it learned (MPI; collective).
func cmdTune(args []string) error {
	fs := newFlagSet("tune", "dpmlbench tune -out table.json [-sizes LIST] [-type T] [-op OP] [-max-calls N]")
	out := fs.String("out", "", "tuning table to write (and to start from when it exists) (required)")
	sizes := fs.String("sizes", bench.DefaultSizes, "message sizes in bytes, as for run")
	typ := fs.String("type", "float32", "element type: float32 or float64")
	opName := fs.String("op", "sum", "reduction")
	maxCalls := fs.Int("max-calls", 2000, "give up on a size after this many calls")
	regretDir := fs.String("regret", "", "write regret.csv and regret.png (cumulative regret over calls per size) into this directory")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("-out is required")
	}
	counts, err := bench.ParseSizes(*sizes)
	if err != nil {
		return usagef("-sizes: %v", err)
	}
	sizesSet := false
	fs.Visit(func(f *flag.Flag) { sizesSet = sizesSet || f.Name == "sizes" })
	if es := map[string]int{"float32": 4, "float64": 8}[*typ]; es > 0 && !sizesSet {
		counts = slices.DeleteFunc(counts, func(n int) bool { return n%es != 0 })
	} else if es > 0 {
		if err := bench.CheckElemSizes(counts, es); err != nil {
			return usagef("-sizes %s with -type %s: %v", *sizes, *typ, err)
		}
	}
	op, err := mpi.ParseOp(*opName)
	if err != nil {
		return usagef("-op: %v", err)
	}
	// The engine loads and saves the table named by DPML_TUNING_FILE.
	if err := os.Setenv(config.TuningFile, *out); err != nil {
		return err
	}
	world, err := initMPI()
	if err != nil {
		return err
	}
	defer mpi.Finalize()
	switch *typ {
	case "float32":
		return tune[float32](world, counts, op, *maxCalls, *regretDir)
	case "float64":
		return tune[float64](world, counts, op, *maxCalls, *regretDir)
	}
	return usagef("-type %q: tune supports float32 and float64", *typ)
}

func tune[T float32 | float64](world *mpi.Comm, sizes []int, op mpi.Op, maxCalls int, regretDir string) error {
	d, err := dpml.New(world)
	if err != nil {
		return err
	}
	if d.Tuner() == nil {
		d.Close()
		return errors.New("the tuner is off (DPML_TUNER=static)")
	}
	var z T
	es := int(unsafe.Sizeof(z))
	var regrets []bench.RegretSeries
	for _, bytes := range sizes {
		n := max(1, bytes/es)
		send := make([]T, n)
		recv := make([]T, n)
		times := make([]float64, 0, maxCalls)
		// Every rank holds the same tuner state, so all leave the loop
		// at the same call.
		for len(times) < maxCalls {
			// A barrier first, as in run: without it a call's time holds
			// the previous call's skew between ranks, the same for every
			// plan, which drowns small messages' differences.
			if err := world.Barrier(); err != nil {
				d.Close()
				return err
			}
			t0 := mpi.Wtime()
			if err := dpml.Allreduce(d, send, recv, op); err != nil {
				d.Close()
				return err
			}
			times = append(times, mpi.Wtime()-t0)
			// Settled, with the reference time of its arm measured (the
			// first drift window after freezing).
			if in, ok := keyInfo(d, n*es); ok && in.State == learn.Frozen && in.Estimate > 0 && len(times) >= 16 {
				break
			}
		}
		if err := mpi.AllreduceInPlace(world, times, mpi.OpMax); err != nil {
			d.Close()
			return err
		}
		best := minOf(times)
		if in, ok := keyInfo(d, n*es); ok && in.State == learn.Frozen && in.Estimate > 0 {
			best = in.Estimate
		}
		regrets = append(regrets, bench.Regret(n*es, times, best))
		if world.Rank() == 0 {
			p := d.LastPlan()
			fmt.Printf("%9s  %-9s l=%-3d k=%-2d cma=%-5v after %d calls, regret %.1f calls of %.1f us\n", results.FormatSize(n*es),
				p.Variant, p.Leaders, p.Pipeline, p.Intra == dpml.IntraCMA, len(times), regrets[len(regrets)-1].Cum[len(times)-1], best*1e6)
		}
	}
	if regretDir != "" && world.Rank() == 0 {
		if err := os.MkdirAll(regretDir, 0o755); err != nil {
			return err
		}
		if err := bench.WriteRegretCSV(filepath.Join(regretDir, "regret.csv"), regrets); err != nil {
			return err
		}
		title := fmt.Sprintf("Tuner regret: %d node(s) x %d ranks", d.Nodes(), d.MinPPN())
		if err := bench.PlotRegret(regrets, title, filepath.Join(regretDir, "regret.png")); err != nil {
			return err
		}
		fmt.Println("wrote", filepath.Join(regretDir, "regret.csv"), "and regret.png")
	}
	if err := d.Close(); err != nil {
		return err
	}
	if world.Rank() == 0 {
		fmt.Println("wrote", os.Getenv(config.TuningFile))
	}
	return nil
}

// keyInfo returns the tuner's state for calls of the given size on this
// communicator's layout.
func keyInfo(d *dpml.Comm, bytes int) (learn.Info, bool) {
	for _, in := range d.Tuner().Infos() {
		lo, hi := in.Key.Range()
		if bytes >= lo && bytes <= hi && int(in.Key.Nodes) == d.Nodes() && int(in.Key.PPN) == d.MinPPN() {
			return in, true
		}
	}
	return learn.Info{}, false
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = min(m, x)
	}
	return m
}
