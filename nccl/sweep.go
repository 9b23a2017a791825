package nccl

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// SweepRow is one line of ncclsweep's sweep.csv: one variant of one
// collective at one size.
type SweepRow struct {
	// Coll is the collective ("allreduce", "reducescatter", "allgather"):
	// the row's coll column, else the file's "# coll=" line, else allreduce.
	Coll    string
	Bytes   int64
	Variant string // POLICY@COMM
	Policy  string // nccl, plugin, model, or a fixed answer C[/ALGO/PROTO]
	Comm    string // dflt, N, minN
	Ranks   int
	Nodes   int
	Reps    int
	Batch   int
	// Median, Min and Max are microseconds per call over the samples.
	Median, Min, Max float64
	AlgBW, BusBW     float64 // GB/s, from the median
	Check            string  // ok, fail, skip
	// Wrong and Checked are the elements that differed from the expected
	// values and the elements compared (0 and 0 in files without them).
	Wrong, Checked int64
	TunerCalls     int64  // getCollInfo calls during the timed batches; -1 without the plugin
	TunerChoice    string // what the plugin set ("16", "16/ring/simple", "native"), or "-"
}

// Seconds returns the median in seconds.
func (r *SweepRow) Seconds() float64 { return r.Median * 1e-6 }

// Fixed returns the fixed answer the row's policy forced, and whether it is one.
func (r *SweepRow) Fixed() (Decision, bool) {
	if r.Policy == "" || r.Policy[0] < '0' || r.Policy[0] > '9' {
		return Native, false
	}
	d, err := ParseDecision(r.Policy)
	return d, err == nil
}

// Sweep is a sweep.csv: the "# key=value" lines and the rows.
type Sweep struct {
	Meta map[string]string
	Env  []string // the "# env NAME=VALUE" lines
	Rows []SweepRow
}

var sweepColumns = []string{"bytes", "variant", "policy", "comm", "ranks", "nodes", "reps", "batch",
	"median_us", "min_us", "max_us", "algbw_gbs", "busbw_gbs", "check", "tuner_calls", "tuner_choice"}

// ReadSweep reads a sweep.csv. Every column ncclsweep writes must be
// there (by name; the order and extra columns are free); comment lines
// may appear anywhere.
func ReadSweep(r io.Reader) (*Sweep, error) {
	sw := &Sweep{Meta: map[string]string{}}
	var body strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		t := sc.Text()
		if strings.HasPrefix(t, "#") {
			t = strings.TrimSpace(strings.TrimPrefix(t, "#"))
			if rest, ok := strings.CutPrefix(t, "env "); ok {
				sw.Env = append(sw.Env, rest)
				continue
			}
			if k, v, ok := strings.Cut(t, "="); ok && k != "" && !strings.ContainsAny(k, " \t") {
				sw.Meta[k] = v // one "key=value" per line; later lines win
			}
			continue
		}
		body.WriteString(t)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sweep csv: %w", err)
	}
	cr := csv.NewReader(strings.NewReader(body.String()))
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("sweep csv: no header line")
		}
		return nil, fmt.Errorf("sweep csv: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range sweepColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("sweep csv: no column %q (want %s)", c, strings.Join(sweepColumns, ","))
		}
	}
	cr.FieldsPerRecord = len(head)
	for n := 2; ; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sweep csv: %w", err)
		}
		row, err := parseSweepRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("sweep csv: data line %d: %w", n, err)
		}
		if row.Coll == "" {
			row.Coll = orDefault(sw.Meta["coll"], "allreduce")
		}
		c, err := ParseColl(row.Coll)
		if err != nil {
			return nil, fmt.Errorf("sweep csv: data line %d: %w", n, err)
		}
		row.Coll = c.String()
		sw.Rows = append(sw.Rows, row)
	}
	if len(sw.Rows) == 0 {
		return nil, fmt.Errorf("sweep csv: no rows")
	}
	return sw, nil
}

func parseSweepRow(rec []string, col map[string]int) (SweepRow, error) {
	var r SweepRow
	var errs []error
	get := func(name string) string { return strings.TrimSpace(rec[col[name]]) }
	i64 := func(name string) int64 {
		v, err := strconv.ParseInt(get(name), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return v
	}
	f64 := func(name string) float64 {
		v, err := strconv.ParseFloat(get(name), 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return v
	}
	r.Bytes = i64("bytes")
	r.Variant, r.Policy, r.Comm = get("variant"), get("policy"), get("comm")
	r.Ranks, r.Nodes = int(i64("ranks")), int(i64("nodes"))
	r.Reps, r.Batch = int(i64("reps")), int(i64("batch"))
	r.Median, r.Min, r.Max = f64("median_us"), f64("min_us"), f64("max_us")
	r.AlgBW, r.BusBW = f64("algbw_gbs"), f64("busbw_gbs")
	r.Check = get("check")
	if _, ok := col["coll"]; ok {
		r.Coll = get("coll")
	}
	for _, c := range []struct {
		name string
		v    *int64
	}{{"wrong", &r.Wrong}, {"checked", &r.Checked}} {
		if _, ok := col[c.name]; ok {
			*c.v = i64(c.name)
		}
	}
	r.TunerCalls = i64("tuner_calls")
	r.TunerChoice = get("tuner_choice")
	if len(errs) > 0 {
		return r, errors.Join(errs...)
	}
	if r.Bytes <= 0 || r.Ranks < 1 || r.Nodes < 1 || !(r.Median > 0) || r.Variant == "" {
		return r, fmt.Errorf("bytes %d, ranks %d, nodes %d, median %g, variant %q: out of range", r.Bytes, r.Ranks, r.Nodes, r.Median, r.Variant)
	}
	return r, nil
}

// Colls returns the collectives of the sweep in the order of their first row.
func (sw *Sweep) Colls() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range sw.Rows {
		if !seen[r.Coll] {
			seen[r.Coll] = true
			out = append(out, r.Coll)
		}
	}
	return out
}

// ForColl returns the rows of collective c as a sweep of their own (the
// same metadata, "coll" set to c). Row, Sizes, Speedup and BuildTable
// take one collective's rows: split a sweep of several first.
func (sw *Sweep) ForColl(c string) *Sweep {
	out := &Sweep{Meta: map[string]string{}, Env: sw.Env}
	for k, v := range sw.Meta {
		out.Meta[k] = v
	}
	out.Meta["coll"] = c
	for _, r := range sw.Rows {
		if r.Coll == c {
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

// Sizes returns the sizes of the sweep, ascending, once each.
func (sw *Sweep) Sizes() []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, r := range sw.Rows {
		if !seen[r.Bytes] {
			seen[r.Bytes] = true
			out = append(out, r.Bytes)
		}
	}
	slices.Sort(out)
	return out
}

// Variants returns the variants in the order of their first row.
func (sw *Sweep) Variants() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range sw.Rows {
		if !seen[r.Variant] {
			seen[r.Variant] = true
			out = append(out, r.Variant)
		}
	}
	return out
}

// Row returns the row of variant v at size n.
func (sw *Sweep) Row(v string, n int64) (*SweepRow, bool) {
	for i := range sw.Rows {
		if sw.Rows[i].Variant == v && sw.Rows[i].Bytes == n {
			return &sw.Rows[i], true
		}
	}
	return nil, false
}
