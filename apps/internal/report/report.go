// Package report is the MPI-free part of the mini-apps' output: the JSON
// result schema both apps write, and the table (shaped like Fig. 11 of the
// DPML paper) that cmd/apptable prints from a set of such files.
package report

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Result is one run of one app with one backend: the JSON file an app
// writes with -json.
type Result struct {
	App      string `json:"app"`     // "hpcg" or "miniamr"
	Backend  string `json:"backend"` // native, dpml, dpml-l4, ...
	Procs    int    `json:"procs"`
	Nodes    int    `json:"nodes"`
	PPN      int    `json:"ppn"` // ranks on the fullest node
	PPNMin   int    `json:"ppn_min"`
	Layout   string `json:"layout"`    // "4x8" (nodes x ppn), "3,2" when uneven
	ProcGrid string `json:"proc_grid"` // the app's 3D process grid

	// TotalSec is the timed region (after setup), slowest rank.
	TotalSec float64 `json:"total_s"`
	// AllreduceSec is the time in allreduce calls, mean over ranks;
	// AllreduceMinSec / AllreduceMaxSec are the extremes over ranks.
	AllreduceSec    float64 `json:"allreduce_s"`
	AllreduceMinSec float64 `json:"allreduce_min_s"`
	AllreduceMaxSec float64 `json:"allreduce_max_s"`
	// AllreduceShare is AllreduceSec / mean total time over ranks.
	AllreduceShare float64 `json:"allreduce_share"`
	// Allreduce splits the allreduce time by purpose.
	Allreduce []CallStat `json:"allreduce"`
	// Plans are the plans the backend ran for the app's message sizes.
	Plans []PlanInfo `json:"plans,omitempty"`
	// Phases are the app's own timers (seconds, mean over ranks).
	Phases map[string]float64 `json:"phases_s,omitempty"`

	Params any  `json:"params"` // the app's parameters
	Output any  `json:"output"` // the app's results (residuals, checksums)
	Meta   Meta `json:"meta"`
}

// CallStat is one purpose of allreduce calls (same on every rank but the
// times).
type CallStat struct {
	Name     string  `json:"name"`
	Calls    int64   `json:"calls"`
	MaxCount int     `json:"max_count"`   // largest call, elements
	Bytes    int64   `json:"bytes"`       // one rank's input bytes over all calls
	MeanSec  float64 `json:"mean_s"`      // mean over ranks
	MaxSec   float64 `json:"max_s"`       // slowest rank
	PerCall  float64 `json:"per_call_us"` // MeanSec / Calls, microseconds
	ElemSize int     `json:"elem_size"`   // bytes per element
}

// PlanInfo describes the plan one message size runs with.
type PlanInfo struct {
	Count    int    `json:"count"`
	ElemSize int    `json:"elem_size"`
	Variant  string `json:"variant"`
	Leaders  int    `json:"leaders"`
	Pipeline int    `json:"pipeline"`
	Segments int    `json:"segments"`
}

// Meta is where and how the run happened.
type Meta struct {
	Date       string            `json:"date"`
	Hosts      []string          `json:"hosts"`
	GoVersion  string            `json:"go_version"`
	GoSched    string            `json:"gosched,omitempty"` // gosched.Sched(): how MPI calls cooperate with the Go scheduler
	MPILibrary string            `json:"mpi_library"`
	GitCommit  string            `json:"git_commit,omitempty"`
	Command    []string          `json:"command"`
	Env        map[string]string `json:"env,omitempty"`
	ElapsedSec float64           `json:"elapsed_s"` // whole program, rank 0
	MaxLeaders int               `json:"max_leaders,omitempty"`
}

// Write writes r as indented JSON to path ("-": standard output).
// Emit is what both apps do at the end of a run: rank 0 prints the summary
// (unless quiet) and writes the JSON (when path is set); other ranks do
// nothing.
func Emit(rank int, quiet bool, path string, r *Result, summary func()) error {
	if rank != 0 {
		return nil
	}
	if !quiet {
		summary()
	}
	if path != "" {
		return Write(path, r)
	}
	return nil
}

func Write(path string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads the result files named by paths; a directory stands for the
// *.json files in it (not recursive). Files that are not app results (no
// "app" field) are skipped and reported in skipped.
func Load(paths []string) (rs []Result, skipped []string, err error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if st.IsDir() {
			m, err := filepath.Glob(filepath.Join(p, "*.json"))
			if err != nil {
				return nil, nil, err
			}
			sort.Strings(m)
			files = append(files, m...)
			continue
		}
		files = append(files, p)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil || r.App == "" {
			skipped = append(skipped, f)
			continue
		}
		rs = append(rs, r)
	}
	return rs, skipped, nil
}

// Row is one line of the Fig. 11 table: an app, a layout, a backend, the
// median over the runs of that combination.
type Row struct {
	App          string
	Procs        int
	Layout       string
	Backend      string
	Runs         int
	TotalSec     float64 // median
	AllreduceSec float64 // median
	Share        float64 // AllreduceSec / TotalSec
	// Speedup is native's total time over this one's (0: no native run);
	// AllreduceSpeedup the same for the allreduce time.
	Speedup          float64
	AllreduceSpeedup float64
	// Phase is the median of the app phase timer chosen in Rows (0: none
	// or absent), PhaseSpeedup native's over this one's.
	Phase        float64
	PhaseSpeedup float64
}

// Rows groups results by (app, procs, layout, backend), takes the median
// total and allreduce times of each group, and computes the speedups
// against the native backend of the same app, procs and layout. Rows are
// sorted by app, procs, layout, then native first, dpml (auto), and the
// fixed plans by leader count.
// phase names an app timer (Result.Phases) to add as a column ("" none).
func Rows(rs []Result, phase string) []Row {
	type key struct {
		app    string
		procs  int
		layout string
		be     string
	}
	groups := map[key][]Result{}
	var keys []key
	for _, r := range rs {
		k := key{r.App, r.Procs, r.Layout, r.Backend}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.app != b.app {
			return a.app < b.app
		}
		if a.procs != b.procs {
			return a.procs < b.procs
		}
		if a.layout != b.layout {
			return a.layout < b.layout
		}
		return backendLess(a.be, b.be)
	})
	rows := make([]Row, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		tot := make([]float64, len(g))
		ar := make([]float64, len(g))
		ph := make([]float64, len(g))
		for i, r := range g {
			tot[i], ar[i], ph[i] = r.TotalSec, r.AllreduceSec, r.Phases[phase]
		}
		row := Row{App: k.app, Procs: k.procs, Layout: k.layout, Backend: k.be, Runs: len(g),
			TotalSec: median(tot), AllreduceSec: median(ar), Phase: median(ph)}
		if row.TotalSec > 0 {
			row.Share = row.AllreduceSec / row.TotalSec
		}
		rows = append(rows, row)
	}
	for i := range rows {
		for _, n := range rows {
			if n.Backend == "native" && n.App == rows[i].App && n.Procs == rows[i].Procs && n.Layout == rows[i].Layout {
				if rows[i].TotalSec > 0 {
					rows[i].Speedup = n.TotalSec / rows[i].TotalSec
				}
				if rows[i].AllreduceSec > 0 {
					rows[i].AllreduceSpeedup = n.AllreduceSec / rows[i].AllreduceSec
				}
				if rows[i].Phase > 0 {
					rows[i].PhaseSpeedup = n.Phase / rows[i].Phase
				}
			}
		}
	}
	return rows
}

// backendLess orders native, dpml, then dpml-l1, dpml-l2, ... by leaders,
// then by name.
func backendLess(a, b string) bool {
	ra, rb := backendRank(a), backendRank(b)
	if ra != rb {
		return ra < rb
	}
	return a < b
}

func backendRank(s string) int {
	switch s {
	case "native":
		return 0
	case "dpml":
		return 1
	}
	if rest, ok := strings.CutPrefix(s, "dpml-l"); ok {
		n := 0
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		return 2 + n
	}
	return 1 << 20
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Format selects the table syntax.
type Format int

const (
	Text     Format = iota // aligned columns
	Markdown               // a GitHub table
	CSV                    // comma separated
)

// Table renders rows in format f; phase (as passed to Rows) adds its two
// columns when not empty.
func Table(rows []Row, f Format, phase string) string {
	head := []string{"app", "procs", "layout", "backend", "runs", "total (s)", "allreduce (s)", "allreduce share", "speedup", "allreduce speedup"}
	if phase != "" {
		head = append(head, phase+" (s)", phase+" speedup")
	}
	x := func(v float64) string {
		if v > 0 {
			return fmt.Sprintf("%.3fx", v)
		}
		return "-"
	}
	var cells [][]string
	for _, r := range rows {
		c := []string{
			r.App, fmt.Sprint(r.Procs), r.Layout, r.Backend, fmt.Sprint(r.Runs),
			fmt.Sprintf("%.4f", r.TotalSec), fmt.Sprintf("%.4f", r.AllreduceSec),
			fmt.Sprintf("%.1f%%", 100*r.Share), x(r.Speedup), x(r.AllreduceSpeedup),
		}
		if phase != "" {
			c = append(c, fmt.Sprintf("%.4f", r.Phase), x(r.PhaseSpeedup))
		}
		cells = append(cells, c)
	}
	var b strings.Builder
	switch f {
	case CSV:
		b.WriteString(strings.Join(head, ",") + "\n")
		for _, c := range cells {
			for i := 7; i < len(c); i++ {
				c[i] = strings.TrimSuffix(strings.TrimSuffix(c[i], "x"), "%")
			}
			b.WriteString(strings.Join(c, ",") + "\n")
		}
	case Markdown:
		b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
		for i := range head {
			if i < 4 {
				b.WriteString("---|")
			} else {
				b.WriteString("---:|")
			}
		}
		b.WriteString("\n")
		for _, c := range cells {
			b.WriteString("| " + strings.Join(c, " | ") + " |\n")
		}
	default:
		w := make([]int, len(head))
		for i, h := range head {
			w[i] = len(h)
		}
		for _, c := range cells {
			for i, s := range c {
				w[i] = max(w[i], len(s))
			}
		}
		line := func(c []string) {
			for i, s := range c {
				if i > 0 {
					b.WriteString("  ")
				}
				if i < 4 {
					fmt.Fprintf(&b, "%-*s", w[i], s)
				} else {
					fmt.Fprintf(&b, "%*s", w[i], s)
				}
			}
			b.WriteString("\n")
		}
		line(head)
		for _, c := range cells {
			line(c)
		}
	}
	return b.String()
}

// HashFloats is an FNV-1a hash of the bits of v: equal hashes mean
// bit-identical vectors (up to hash collisions).
func HashFloats(v []float64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return h.Sum64()
}
