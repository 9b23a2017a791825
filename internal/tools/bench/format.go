package bench

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"io"
	"strings"
)

// Output formats of the result rows (-format of dpmlbench run and table, and
// of dpmlbench-c, which prints the same bytes for the same results).
const (
	// FormatTable is the clients' own table: min, median, mean, p99, IQR,
	// ratio to the MPI library and #wrong per size and variant.
	FormatTable = "table"
	// FormatNCCL is nccl-tests' allreduce table: size, count, type, redop,
	// time, algbw, busbw, #wrong.
	FormatNCCL = "nccl"
	// FormatOSU is the OSU micro-benchmarks' latency table: size, average,
	// minimum and maximum latency, iterations.
	FormatOSU = "osu"
)

// Formats lists the -format values.
var Formats = []string{FormatTable, FormatNCCL, FormatOSU}

// ParseFormat validates a -format value.
func ParseFormat(s string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, f := range Formats {
		if t == f {
			return f, nil
		}
	}
	return "", fmt.Errorf("format %q: want table, nccl or osu", s)
}

// RowWriter prints result rows as sizes finish: its header before the
// first rows, then the rows of each call in the order given.
type RowWriter interface {
	Rows(rs []results.Result)
}

// NewRowWriter returns the writer of format (one of Formats; anything else
// is FormatTable) on w. m gives the world size, type and op the nccl rows
// need.
func NewRowWriter(w io.Writer, format string, m results.Meta) RowWriter {
	switch format {
	case FormatNCCL:
		return &ncclTable{w: w, ranks: max(m.WorldSize, 1), typ: m.Type, op: m.Op}
	case FormatOSU:
		return &osuTable{w: w}
	}
	return NewTable(w)
}

// WriteFormat writes the whole report in format, grouped by size.
func WriteFormat(w io.Writer, rep *results.Report, format string) {
	rw := NewRowWriter(w, format, rep.Meta)
	for _, s := range rep.Sizes() {
		var rs []results.Result
		for _, r := range rep.Results {
			if r.Bytes == s {
				rs = append(rs, r)
			}
		}
		rw.Rows(rs)
	}
}

// wrongCell is a result's #wrong: the wrong elements counted by -check (0
// when it passed), N/A when results were not checked.
func wrongCell(r results.Result) string {
	if r.Check == "" {
		return "N/A"
	}
	return fmt.Sprint(r.Mismatches)
}

// skippedLine is the comment line the nccl and osu formats print for a
// point that did not run: their columns have no place for a reason.
func skippedLine(w io.Writer, r results.Result) {
	fmt.Fprintf(w, "# %d %s: skipped: %s\n", r.Bytes, r.Label(), r.Skipped)
}

// ncclTable writes nccl-tests' allreduce columns, with the variant after
// the reduction (a client times several per size).
type ncclTable struct {
	w       io.Writer
	ranks   int
	typ, op string
	header  bool
}

// NCCLHeader is the nccl format's header, the same in both clients.
func NCCLHeader(ranks int) string {
	return fmt.Sprintf("# busbw = algbw x 2(n-1)/n, n = %d ranks; time = median per call; #wrong: wrong elements (N/A: not checked)\n", ranks) +
		"#       size        count     type  redop  variant                            time    algbw    busbw  #wrong\n" +
		"#        (B)   (elements)                                                     (us)   (GB/s)   (GB/s)\n"
}

// Rows writes per result the size in bytes, the elements per rank, type,
// reduction, the median time per call (us), algbw (bytes / time, GB/s),
// busbw (algbw x 2(n-1)/n for n ranks: the bandwidth each link would
// need, comparable across rank counts) and #wrong.
func (t *ncclTable) Rows(rs []results.Result) {
	if !t.header {
		t.header = true
		io.WriteString(t.w, NCCLHeader(t.ranks))
	}
	n := float64(t.ranks)
	for _, r := range rs {
		if r.Skipped != "" {
			skippedLine(t.w, r)
			continue
		}
		if !(r.US.Median > 0) {
			continue
		}
		alg := float64(r.Bytes) / (r.US.Median * 1e-6) / 1e9
		bus := alg * 2 * (n - 1) / n
		fmt.Fprintf(t.w, "%12d %12d %8s %6s  %-28s %10.2f %8.2f %8.2f %7s\n", r.Bytes, r.Count, t.typ, t.op, r.Label(), r.US.Median, alg, bus, wrongCell(r))
	}
}

// osuTable writes the OSU latency columns (osu_allreduce -f), with the
// variant after the iterations.
type osuTable struct {
	w      io.Writer
	header bool
}

// OSUHeader is the osu format's header, the same in both clients.
const OSUHeader = "# Avg, Min and Max Latency over the samples of the pattern (us); Iterations: timed calls\n" +
	"# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations  Variant\n"

// Rows writes per result the size in bytes, the mean, minimum and maximum
// of the samples (us), the timed calls and the variant.
func (t *osuTable) Rows(rs []results.Result) {
	if !t.header {
		t.header = true
		io.WriteString(t.w, OSUHeader)
	}
	for _, r := range rs {
		if r.Skipped != "" {
			skippedLine(t.w, r)
			continue
		}
		if r.Iters < 1 {
			continue
		}
		fmt.Fprintf(t.w, "%-10d%18.2f%18.2f%18.2f%12d  %s\n", r.Bytes, r.US.Mean, r.US.Min, r.US.Max, r.Iters, r.Label())
	}
}

// WriteNCCL writes the report in nccl-tests' allreduce table.
func WriteNCCL(w io.Writer, rep *results.Report) { WriteFormat(w, rep, FormatNCCL) }

// CheckLine is the closing line of a run with -check: how many points were
// checked and how many elements were wrong, so a passed check shows ("-check:
// 12 points checked, 0 wrong elements"). "" when nothing was checked.
func CheckLine(rs []results.Result) string {
	points, wrong := 0, int64(0)
	for _, r := range rs {
		if r.Check != "" {
			points++
			wrong += r.Mismatches
		}
	}
	if points == 0 {
		return ""
	}
	return fmt.Sprintf("-check: %d points checked, %d wrong elements", points, wrong)
}
