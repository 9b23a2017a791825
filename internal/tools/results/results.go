package results

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the "format" field of the JSON report; bump it on an
// incompatible change.
const FormatVersion = 1

// Result is one (size, variant) point of a sweep. Times are microseconds;
// sample i of the underlying distribution is the maximum over ranks of the
// time of timed iteration i.
type Result struct {
	Bytes    int    `json:"bytes"`    // message size: Count * element size
	Count    int    `json:"count"`    // elements per rank
	Variant  string `json:"variant"`  // native, dpml or auto
	Leaders  int    `json:"leaders"`  // l of a fixed dpml plan; 0 for native and auto
	Pipeline int    `json:"pipeline"` // k of a fixed dpml plan; 0 for native and auto
	Warmup   int    `json:"warmup"`   // warm-up iterations
	Iters    int    `json:"iters"`    // timed iterations (identical on all ranks)
	// US summarizes the per-iteration maxima over ranks, in microseconds.
	US Summary `json:"us"`
	// Check is "" when -check was off, "ok" or "mismatch".
	Check      string `json:"check,omitempty"`
	Mismatches int64  `json:"mismatches,omitempty"`  // differing elements, summed over ranks and iterations
	MismatchAt string `json:"mismatch_at,omitempty"` // first difference seen on rank 0, if any
	// Phases are the engine's per-phase times (dpml and auto with -phases).
	Phases []Phase `json:"phases,omitempty"`
	// Skipped gives the reason when the point was not run (e.g. the
	// engine rejects the plan for this size); then no times are set.
	Skipped string `json:"skipped,omitempty"`
	// Plan is what the engine ran (dpml and auto): for auto the chosen
	// leaders and pipeline depth; for a fixed plan the active leaders may
	// be fewer than requested on small messages.
	Plan *PlanInfo `json:"plan,omitempty"`
	// FloorUS is the memory-bandwidth lower bound of the call on the
	// busiest node when -membw ran: every rank's input read once and its
	// output written once at the node's copy bandwidth.
	FloorUS float64 `json:"membw_floor_us,omitempty"`
	// SamplesUS are the per-iteration maxima (only with -samples).
	SamplesUS []float64 `json:"samples_us,omitempty"`
	// Spec is the variant's plan spec (dpml.ParseOverride's grammar:
	// "native", "auto", "dpml:l=2", "pipelined:l=8,k=4,intra=cma"), set by
	// the C client (dpmlbench-c), whose variants are specs; "" from
	// dpmlbench, whose fixed plans are Leaders x Pipeline.
	Spec string `json:"spec,omitempty"`
	// Batches is set for the b2b pattern: the Iters calls ran back to back
	// in Batches batches, and a sample (US) is a batch's average call time
	// on a rank, max over ranks.
	Batches int `json:"batches,omitempty"`
	// PerCall describes single calls inside b2b batches: each rank's own
	// distribution over its calls (one clock read after each call), then
	// the largest value over ranks of each statistic, in microseconds.
	PerCall *Summary `json:"per_call_us,omitempty"`
	// Offload is where a fixed plan forced the inter-node step ("sharp"
	// or "host": dpmlbench -offload); "" when the engine chose.
	Offload string `json:"offload,omitempty"`
}

// PlanInfo is the part of the engine's plan a result records.
type PlanInfo struct {
	Variant  string `json:"variant"`
	Leaders  int    `json:"leaders"`
	Pipeline int    `json:"pipeline"`
	Segments int    `json:"segments"`
	CMA      bool   `json:"cma,omitempty"`    // intra-node by cross-memory attach
	Intra    string `json:"intra,omitempty"`  // intra-node transport: shm, cma or tree
	Radix    int    `json:"radix,omitempty"`  // the reduction tree's radix (intra tree)
	Stream   bool   `json:"stream,omitempty"` // copy-out with streaming stores
	// Tuner is the tuner's state of the call's key when the tuner chose the
	// plan (auto): "frozen" or "exploring"; Switches counts its settled
	// plan's changes so far, Changes the calls that ran another plan than
	// the call before (probes included), both since the key was first
	// seen. C client only.
	Tuner    string `json:"tuner,omitempty"`
	Switches int64  `json:"switches,omitempty"`
	Changes  int64  `json:"changes,omitempty"`
	// CostUS and SkewUS are the tuner's running means of a call's cost
	// (from the last arrival) and of the arrival skew (the largest minus
	// the smallest rank's time) for the key. Go driver only.
	CostUS float64 `json:"tuner_cost_us,omitempty"`
	SkewUS float64 `json:"tuner_skew_us,omitempty"`
	// Offload is where the inter-node step ran when an offload was
	// configured or asked for: "sharp" (package sharp) or "host".
	Offload string `json:"offload,omitempty"`
	// Passed is why libdpml.so handed the call to the MPI library without
	// entering the engine (DPMLX_Last_plan's reason, e.g. "small"); then
	// Variant is "native". C client only.
	Passed string `json:"passed,omitempty"`
}

// FloorUS returns the memory-bandwidth floor in microseconds of an
// allreduce of bytes per rank on a node of ppn ranks with a copy bandwidth
// of copyGBs (bytes read plus written per second, 1e9 units): 2*bytes*ppn
// bytes must cross the memory interface. 0 when the bandwidth is unknown.
func FloorUS(bytes, ppn int, copyGBs float64) float64 {
	if copyGBs <= 0 {
		return 0
	}
	return 2 * float64(bytes) * float64(ppn) / (copyGBs * 1e9) * 1e6
}

// Phase is one DPML phase's time: per iteration the maximum over ranks,
// then the median and mean over iterations, in microseconds.
type Phase struct {
	Name     string  `json:"name"`
	MedianUS float64 `json:"median_us"`
	MeanUS   float64 `json:"mean_us"`
}

// Label names the variant for tables and legends: "native", "auto",
// "dpml l=2 k=4", or the plan spec when the result has one ("dpml:l=2").
func (r Result) Label() string {
	if r.Spec != "" {
		return r.Spec
	}
	if r.Variant == VariantDPML {
		l := "dpml l=" + itoa(r.Leaders) + " k=" + itoa(r.Pipeline)
		if r.Offload != "" {
			l += " offload=" + r.Offload
		}
		return l
	}
	return r.Variant
}

// OK reports whether the point was measured (not skipped).
func (r Result) OK() bool { return r.Skipped == "" && r.Iters > 0 }

// Meta describes the run: enough to reproduce it and to judge it.
type Meta struct {
	Tool        string            `json:"tool"`
	Format      int               `json:"format"`
	Command     []string          `json:"command"`      // os.Args
	CommandLine string            `json:"command_line"` // shell-quoted
	Date        string            `json:"date"`         // RFC 3339, rank 0's clock at start
	GoVersion   string            `json:"go_version"`
	GitCommit   string            `json:"git_commit,omitempty"`
	GitDirty    bool              `json:"git_dirty,omitempty"`
	MPILibrary  string            `json:"mpi_library"`
	Hosts       []string          `json:"hosts"`      // distinct node names, in rank order of first appearance
	RankHosts   []string          `json:"rank_hosts"` // node name of every rank
	Nodes       int               `json:"nodes"`
	PPN         int               `json:"ppn"`     // ranks per node (the smallest node)
	PPNMax      int               `json:"ppn_max"` // ranks on the largest node
	WorldSize   int               `json:"world_size"`
	NumCPU      int               `json:"num_cpu"`              // runtime.NumCPU on rank 0: CPUs it may run on
	GOMAXPROCS  int               `json:"gomaxprocs,omitempty"` // rank 0's, after mpi.Init
	GoSched     string            `json:"gosched,omitempty"`    // gosched.Sched() on rank 0: how MPI calls cooperate with the Go scheduler
	HostCPUs    int               `json:"host_cpus,omitempty"`  // CPUs online on rank 0's host
	Machine     string            `json:"machine,omitempty"`    // rank 0's CPU model and CPUs online (bench.Machine)
	LLCBytes    int               `json:"llc_bytes,omitempty"`
	Type        string            `json:"type"`
	ElemSize    int               `json:"elem_size"`
	Op          string            `json:"op"`
	Sizes       string            `json:"sizes"`
	Variants    []string          `json:"variants"`
	Leaders     []int             `json:"leaders,omitempty"`   // fixed l values run (after clamping)
	Pipelines   []int             `json:"pipelines,omitempty"` // fixed k values run
	MaxLeaders  int               `json:"max_leaders,omitempty"`
	TargetSec   float64           `json:"target_s"`
	MinIters    int               `json:"min_iters"`
	MaxIters    int               `json:"max_iters"`
	Warmup      int               `json:"warmup"`
	Rotate      bool              `json:"rotate"`
	RotateBytes int               `json:"rotate_bytes,omitempty"`
	Check       bool              `json:"check"`
	Env         map[string]string `json:"env,omitempty"` // DPML_* and OMPI_MCA_* variables
	ElapsedSec  float64           `json:"elapsed_s,omitempty"`

	// How the calls were made, so a table says what it measured.
	// Client is "go" (dpmlbench: the Go API, package dpml) or "c"
	// (dpmlbench-c: MPI_Allreduce from a C program, libdpml.so preloaded
	// or linked); "" in reports older than the field (dpmlbench, Go).
	Client string `json:"client,omitempty"`
	// Pattern is "b2b" (calls back to back in batches, no barrier between
	// them), "barrier" (a barrier before each timed call) or "skew" (each
	// rank busy-computes a seeded random 0..SkewUS us before each call,
	// no barrier; a sample is the time inside the call); "" in older
	// reports, which are all "barrier".
	Pattern string  `json:"pattern,omitempty"`
	SkewUS  float64 `json:"skew_us,omitempty"`  // skew: the delays' upper bound
	Seed    uint64  `json:"seed,omitempty"`     // skew: the delays' seed
	Batches int     `json:"batches,omitempty"`  // b2b: batches per point (fewer when there are fewer calls)
	PerCall bool    `json:"per_call,omitempty"` // b2b: single calls were timed too (Result.PerCall)
	// Run (barrier, skew): consecutive calls of a variant per round, as a
	// program runs one plan for many calls; 0 in reports older than the
	// field, which switched plans on every call (the same as 1).
	Run int `json:"run,omitempty"`
	// DPMLLibrary is the libdpml.so the C client used: its path and
	// DPMLX_Library_version; "" when it ran without one (native only).
	DPMLLibrary string `json:"dpml_library,omitempty"`
	// Offload describes the in-network reduction offload the engine
	// attached (dpml.OffloadInfo), or what the environment asked for; it
	// says "EMULATED" when the switch was the tests' emulation, whose
	// times say nothing about SHArP. "" when none was asked for.
	Offload string `json:"offload,omitempty"`
}

// Pattern names of Meta.Pattern.
const (
	PatternB2B     = "b2b"
	PatternBarrier = "barrier"
	PatternSkew    = "skew"
)

// Patterns lists the -pattern values.
var Patterns = []string{PatternB2B, PatternBarrier, PatternSkew}

// ParsePattern validates a -pattern value.
func ParsePattern(s string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, p := range Patterns {
		if t == p {
			return p, nil
		}
	}
	return "", fmt.Errorf("pattern %q: want b2b, barrier or skew", s)
}

// How describes how the calls were made: "client c, pattern b2b (10
// batches per point)"; reports older than the fields are Go and barrier.
func (m Meta) How() string {
	client, pattern := m.Client, m.Pattern
	if client == "" {
		client = "go"
	}
	if pattern == "" {
		pattern = PatternBarrier
	}
	s := "client " + client + ", pattern " + pattern
	switch pattern {
	case PatternB2B:
		if m.Batches > 0 {
			s += fmt.Sprintf(" (%d batches per point, average per call then max over ranks)", m.Batches)
		}
	case PatternSkew:
		s += fmt.Sprintf(" (0..%g us busy compute before each call, seed %d; time inside the call, max over ranks)", m.SkewUS, m.Seed)
	case PatternBarrier:
		s += " (barrier before each call; max over ranks per call)"
	}
	return s
}

// MemBW is the memory-bandwidth probe's result: every rank of a node runs
// single-threaded kernels over its own buffers at the same time; a node's
// bandwidth is the bytes read and written by all its ranks over the time of
// the slowest, best of the repetitions.
type MemBW struct {
	Method       string      `json:"method"`         // "ranks" or "threads"
	BytesPerRank int         `json:"bytes_per_rank"` // per array
	Reps         int         `json:"reps"`
	CopyGBs      float64     `json:"copy_gbs"`                  // per node, the smallest node
	TriadGBs     float64     `json:"triad_gbs"`                 // per node, the smallest node
	SingleCopy   float64     `json:"single_copy_gbs,omitempty"` // one rank alone
	PerNode      []NodeMemBW `json:"per_node,omitempty"`
}

// NodeMemBW is one node's bandwidth.
type NodeMemBW struct {
	Host     string  `json:"host"`
	Ranks    int     `json:"ranks"`
	CopyGBs  float64 `json:"copy_gbs"`
	TriadGBs float64 `json:"triad_gbs"`
}

// Report is the JSON document dpmlbench writes and `dpmlbench plot` reads.
type Report struct {
	Meta    Meta     `json:"meta"`
	MemBW   *MemBW   `json:"membw,omitempty"`
	Results []Result `json:"results"`
	Errors  []string `json:"errors,omitempty"`
}

// Native returns the native result of the given size, if measured.
func (rep *Report) Native(bytes int) (Result, bool) {
	return NativeOf(rep.Results, bytes)
}

// NativeOf returns the native result of the given size among rs, if
// measured.
func NativeOf(rs []Result, bytes int) (Result, bool) {
	for _, r := range rs {
		if r.Bytes == bytes && r.Variant == VariantNative && r.OK() {
			return r, true
		}
	}
	return Result{}, false
}

// Ratio is r's median over the native median of the same size: DPML ÷ MPI
// library, lower is better (< 1: r is faster). It is the one ratio the
// tables, CSV and plots show. NaN when either is missing.
func Ratio(r, native Result) float64 {
	if !r.OK() || !native.OK() || native.US.Median <= 0 {
		return math.NaN()
	}
	return r.US.Median / native.US.Median
}

// Sizes returns the distinct message sizes of the results, ascending.
func (rep *Report) Sizes() []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range rep.Results {
		if !seen[r.Bytes] {
			seen[r.Bytes] = true
			out = append(out, r.Bytes)
		}
	}
	sort.Ints(out)
	return out
}

// WriteJSON writes the report, indented.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sanitize(rep)); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// sanitize replaces NaN and Inf (which JSON cannot carry) by 0 in a copy.
func sanitize(rep *Report) *Report {
	c := *rep
	c.Results = make([]Result, len(rep.Results))
	fix := func(x *float64) {
		if math.IsNaN(*x) || math.IsInf(*x, 0) {
			*x = 0
		}
	}
	for i, r := range rep.Results {
		for _, p := range []*float64{&r.US.Min, &r.US.Max, &r.US.Mean, &r.US.Median, &r.US.P25, &r.US.P75, &r.US.P99, &r.US.Stddev} {
			fix(p)
		}
		if r.PerCall != nil {
			pc := *r.PerCall
			for _, p := range []*float64{&pc.Min, &pc.Max, &pc.Mean, &pc.Median, &pc.P25, &pc.P75, &pc.P99, &pc.Stddev} {
				fix(p)
			}
			r.PerCall = &pc
		}
		c.Results[i] = r
	}
	return &c
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(r io.Reader) (*Report, error) {
	var rep Report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("read JSON report: %w", err)
	}
	if rep.Meta.Format > FormatVersion {
		return nil, fmt.Errorf("read JSON report: format %d is newer than this dpmlbench (%d)", rep.Meta.Format, FormatVersion)
	}
	return &rep, nil
}

// ReadJSONFile reads a report from a file.
func ReadJSONFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep, err := ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// CSVHeader returns the CSV columns for a report: fixed columns, then one
// median column per DPML phase name that occurs.
func CSVHeader(rep *Report) []string {
	h := []string{"bytes", "size", "count", "type", "op", "nodes", "ppn", "variant", "label", "leaders", "pipeline",
		"warmup", "iters", "min_us", "median_us", "mean_us", "p25_us", "p75_us", "iqr_us", "p99_us", "max_us", "stddev_us",
		"ratio_vs_native", "check", "mismatches", "skipped",
		"plan_variant", "plan_leaders", "plan_pipeline", "plan_segments", "plan_cma", "plan_stream", "membw_floor_us",
		"client", "pattern", "spec", "batches", "call_min_us", "call_median_us"}
	for _, p := range phaseNames(rep.Results) {
		h = append(h, "phase_"+p+"_median_us")
	}
	return h
}

func phaseNames(rs []Result) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rs {
		for _, p := range r.Phases {
			if !seen[p.Name] {
				seen[p.Name] = true
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// WriteCSV writes one row per result.
func WriteCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	header := CSVHeader(rep)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	names := phaseNames(rep.Results)
	f := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
	}
	for _, r := range rep.Results {
		native, _ := rep.Native(r.Bytes)
		us := r.US
		row := []string{
			itoa(r.Bytes), FormatSize(r.Bytes), itoa(r.Count), rep.Meta.Type, rep.Meta.Op,
			itoa(rep.Meta.Nodes), itoa(rep.Meta.PPN), r.Variant, r.Label(), itoa(r.Leaders), itoa(r.Pipeline),
			itoa(r.Warmup), itoa(r.Iters),
		}
		if r.OK() {
			row = append(row, f(us.Min), f(us.Median), f(us.Mean), f(us.P25), f(us.P75), f(us.IQR()), f(us.P99), f(us.Max), f(us.Stddev),
				f(Ratio(r, native)))
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "", "")
		}
		row = append(row, r.Check, strconv.FormatInt(r.Mismatches, 10), r.Skipped)
		if p := r.Plan; p != nil {
			row = append(row, p.Variant, itoa(p.Leaders), itoa(p.Pipeline), itoa(p.Segments),
				strconv.FormatBool(p.CMA), strconv.FormatBool(p.Stream))
		} else {
			row = append(row, "", "", "", "", "", "")
		}
		if r.FloorUS > 0 {
			row = append(row, f(r.FloorUS))
		} else {
			row = append(row, "")
		}
		batches, callMin, callMedian := "", "", ""
		if r.Batches > 0 {
			batches = itoa(r.Batches)
		}
		if r.PerCall != nil {
			callMin, callMedian = f(r.PerCall.Min), f(r.PerCall.Median)
		}
		row = append(row, rep.Meta.Client, rep.Meta.Pattern, r.Spec, batches, callMin, callMedian)
		for _, n := range names {
			v := ""
			for _, p := range r.Phases {
				if p.Name == n {
					v = f(p.MedianUS)
				}
			}
			row = append(row, v)
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

// The report files a client writes into its output directory (bench.WriteAll).
const (
	JSONFile = "results.json"
	CSVFile  = "results.csv"
)

// ShellQuote joins args into a command line a POSIX shell would split back
// into the same words.
func ShellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r))
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// DirTimeFormat is the time in a results folder's name: UTC, ISO 8601
// basic format ("20261127T120000Z"), the same in both clients and make
// bench.
const DirTimeFormat = "20060102T150405Z"

// DefaultOutDir is where a client writes its results when -out is not
// given: bench/results/local-<UTC start time>/<client>-<pattern> ("go" or
// "c"), the layout make bench uses, ignored by git.
func DefaultOutDir(start time.Time, client, pattern string) string {
	return filepath.Join("bench", "results", "local-"+start.UTC().Format(DirTimeFormat), client+"-"+pattern)
}

// Summary describes a set of samples (seconds, or any unit: Summarize does
// not care). Percentiles use linear interpolation between closest ranks
// (the R-7 / NumPy default definition).
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P25    float64 `json:"p25"`
	P75    float64 `json:"p75"`
	P99    float64 `json:"p99"`
	Stddev float64 `json:"stddev"` // sample standard deviation (n-1); 0 for n < 2
}

// IQR is the interquartile range P75 - P25.
func (s Summary) IQR() float64 { return s.P75 - s.P25 }

// Scale returns the summary with every value multiplied by f (e.g. 1e6 to
// turn seconds into microseconds).
func (s Summary) Scale(f float64) Summary {
	s.Min *= f
	s.Max *= f
	s.Mean *= f
	s.Median *= f
	s.P25 *= f
	s.P75 *= f
	s.P99 *= f
	s.Stddev *= math.Abs(f)
	return s
}

// multiples only, so FormatSize and ParseSize round-trip).
func FormatSize(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + "G"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}

// Variant names of Result.Variant (and of the clients' -variants).
const (
	VariantNative = "native" // mpi.Allreduce on the world communicator
	VariantDPML   = "dpml"   // dpml.AllreduceWith with a fixed (leaders, pipeline) plan
	VariantAuto   = "auto"   // dpml.Allreduce: the engine's own choice
)
