package bench

import (
	"bytes"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"table", FormatTable, ""},
		{"NCCL", FormatNCCL, ""},
		{" osu ", FormatOSU, ""},
		{"csv", "", `format "csv": want table, nccl or osu`},
		{"", "", `format "": want table, nccl or osu`},
	} {
		got, err := ParseFormat(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestFormats: each format's header and rows for the sample report, the
// numbers computed here: the nccl row of 64K native (84 us median on 4
// ranks) has algbw 65536/84e-6/1e9 = 0.78 GB/s and busbw x 1.5 = 1.17; the
// osu row of 4 B native has the mean 22, min 18 and max 40 of us(20).
func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format string
		header []string // lines the output starts with
		rows   []string // lines the output holds
		absent []string
	}{
		{FormatTable,
			[]string{TableLegend, "    size  variant    l   k  iters     min_us  median_us    mean_us     p99_us     iqr_us   ratio  #wrong"},
			[]string{"       4  native     -   -     10      18.00      20.00      22.00      38.00       2.00   1.000       0"},
			nil},
		{FormatNCCL,
			[]string{"# busbw = algbw x 2(n-1)/n, n = 4 ranks; time = median per call; #wrong: wrong elements (N/A: not checked)",
				"#       size        count     type  redop  variant                            time    algbw    busbw  #wrong",
				"#        (B)   (elements)                                                     (us)   (GB/s)   (GB/s)"},
			[]string{"       65536        16384  float32    sum  native                            84.00     0.78     1.17       0",
				"           4            1  float32    sum  dpml l=2 k=4                      15.00     0.00     0.00       7",
				"# 4 dpml l=2 k=8: skipped: plan rejected: count 1 < 16 segments"},
			[]string{"speedup"}},
		{FormatOSU,
			[]string{"# Avg, Min and Max Latency over the samples of the pattern (us); Iterations: timed calls",
				"# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations  Variant"},
			[]string{"4                      22.00             18.00             40.00          10  native",
				"65536                  48.40             39.60             88.00          10  auto",
				"# 4 dpml l=2 k=8: skipped: plan rejected: count 1 < 16 segments"},
			nil},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var b bytes.Buffer
			WriteFormat(&b, sampleReport(), tc.format)
			lines := strings.Split(b.String(), "\n")
			for i, h := range tc.header {
				if i >= len(lines) || lines[i] != h {
					t.Errorf("header line %d:\n got  %q\n want %q", i, lines[min(i, len(lines)-1)], h)
				}
			}
			for _, r := range tc.rows {
				if !slices.Contains(lines, r) {
					t.Errorf("no line %q in\n%s", r, b.String())
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(b.String(), a) {
					t.Errorf("%q in\n%s", a, b.String())
				}
			}
			// Live: the header comes once, however many sizes follow.
			b.Reset()
			w := NewRowWriter(&b, tc.format, sampleReport().Meta)
			w.Rows(sampleReport().Results[:1])
			w.Rows(sampleReport().Results[4:5])
			if n := strings.Count(b.String(), tc.header[len(tc.header)-1]); n != 1 {
				t.Errorf("header printed %d times:\n%s", n, b.String())
			}
		})
	}
}

func TestCheckLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []results.Result
		want string
	}{
		{"unchecked", []results.Result{{Bytes: 4}}, ""},
		{"passed", []results.Result{{Check: "ok"}, {Check: "ok"}, {}}, "-check: 2 points checked, 0 wrong elements"},
		{"failed", []results.Result{{Check: "ok"}, {Check: "mismatch", Mismatches: 3}}, "-check: 2 points checked, 3 wrong elements"},
	} {
		if got := CheckLine(tc.rs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{4, "4 B"}, {1000, "1000 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"}, {64 << 20, "64 MiB"}, {1 << 30, "1 GiB"}} {
		if got := HumanBytes(tc.n); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestSizeTicks: ticks sit at the measured sizes only; past
// maxSizeLabels sizes some go unlabelled so labels do not overlap.
func TestSizeTicks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sizes    []int
		lo, hi   float64
		ticks    int
		labelled int
	}{
		{"few", []int{8, 128, 2048}, 1, 1 << 20, 3, 3},
		{"outside the range", []int{8, 128, 2048}, 100, 1000, 1, 1},
		{"many", []int{4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}, 1, 1 << 20, 14, 7},
	} {
		ticks := sizeTicks{sizes: tc.sizes}.Ticks(tc.lo, tc.hi)
		labelled := 0
		for _, tk := range ticks {
			if !slices.Contains(tc.sizes, int(tk.Value)) {
				t.Errorf("%s: tick at %v, not a measured size", tc.name, tk.Value)
			}
			if tk.Label != "" {
				labelled++
			}
		}
		if len(ticks) != tc.ticks || labelled != tc.labelled {
			t.Errorf("%s: %d ticks, %d labelled; want %d, %d", tc.name, len(ticks), labelled, tc.ticks, tc.labelled)
		}
	}
}

// TestPlotTitle: the title names what was measured and where; the Go and
// C clients' plots are titled differently.
func TestPlotTitle(t *testing.T) {
	base := results.Meta{Nodes: 2, PPN: 2, PPNMax: 2, Type: "float32", Op: "sum", GitCommit: "0123456789abcdef", Hosts: []string{"node1"}, HostCPUs: 2}
	for _, tc := range []struct {
		name string
		edit func(*results.Meta)
		want []string
	}{
		{"go", func(m *results.Meta) { m.Client, m.Pattern = "go", "b2b" },
			[]string{"Go client (dpmlbench", "pattern b2b", "2 node(s) x 2 ranks", "machine: node1, 2 CPUs", "commit 0123456789ab"}},
		{"c", func(m *results.Meta) { m.Client, m.Pattern, m.Machine = "c", "skew", "AMD EPYC, 2 CPUs" },
			[]string{"C client (dpmlbench-c", "pattern skew", "machine: AMD EPYC, 2 CPUs"}},
		{"old report", func(m *results.Meta) { m.GitCommit, m.PPNMax = "", 3 },
			[]string{"Go client", "pattern barrier", "2 node(s) x 2-3 ranks", "commit unknown"}},
	} {
		m := base
		tc.edit(&m)
		got := PlotTitle(m, "what")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: title %q lacks %q", tc.name, got, w)
			}
		}
	}
}

// TestPlotFromFixture renders both plots of a C client's results.json (as
// SVG, whose text can be read back, and as PNG) and checks their
// structure: written, not empty, the title naming the client and the
// pattern, the x ticks at the measured sizes, the legend's entries.
func TestPlotFromFixture(t *testing.T) {
	rep, err := results.ReadJSONFile(filepath.Join("testdata", "results-c-b2b.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		draw   func(*results.Report, string) error
		legend []string
		refs   int // legend entries that are reference lines, no band
	}{
		{"latency", PlotLatency, []string{"native", "dpml l=1", "dpml l=2", "dpml auto"}, 0},
		{"ratio", PlotRatio, []string{"best fixed (l,k)", "dpml auto", "MPI library = 1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ext := range []string{".svg", ".png"} {
				path := filepath.Join(dir, tc.name+ext)
				if err := tc.draw(rep, path); err != nil {
					t.Fatal(err)
				}
				st, err := os.Stat(path)
				if err != nil || st.Size() < 1000 {
					t.Fatalf("%s: %v, %v", path, st, err)
				}
			}
			svg, err := os.ReadFile(filepath.Join(dir, tc.name+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			text := svgText(string(svg))
			want := append([]string{"C client (dpmlbench-c", "pattern b2b", "2 node(s) x 2 ranks", "machine: AMD EPYC, 2 CPUs",
				"commit 0123456789ab", "8 B", "128 B", "2 KiB", "32 KiB", "512 KiB"}, tc.legend...)
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("%s.svg: no text %q in %q", tc.name, w, text)
				}
			}
			// A band per series: translucent polygons (fill-opacity < 1).
			if n := strings.Count(string(svg), "fill-opacity:0.188"); n != len(tc.legend)-tc.refs {
				t.Errorf("%s.svg: %d translucent bands, want one per series", tc.name, n)
			}
		})
	}
}

// svgText joins the text elements of an SVG document.
func svgText(svg string) string {
	var parts []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		parts = append(parts, m[1])
	}
	return strings.Join(parts, " | ")
}

func TestMachineFromCPUInfo(t *testing.T) {
	for _, tc := range []struct {
		name, cpuinfo string
		want          string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  9654 96-Core Processor\nflags\t: fpu\n", "AMD EPYC 9654 96-Core Processor, 32 CPUs"},
		{"no model", "processor\t: 0\nBogoMIPS\t: 50.00\n", ""},
		{"empty model", "model name\t:   \n", ""},
	} {
		if got := machineFromCPUInfo(tc.cpuinfo, 32); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDefaultOutDir(t *testing.T) {
	start := time.Date(2026, 11, 27, 13, 4, 5, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct{ client, pattern, want string }{
		{"go", results.PatternB2B, "bench/results/local-20261127T120405Z/go-b2b"},
		{"c", results.PatternSkew, "bench/results/local-20261127T120405Z/c-skew"},
	} {
		if got := results.DefaultOutDir(start, tc.client, tc.pattern); got != tc.want {
			t.Errorf("results.DefaultOutDir(%s, %s) = %q, want %q", tc.client, tc.pattern, got, tc.want)
		}
	}
}
