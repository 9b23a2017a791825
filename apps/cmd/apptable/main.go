// Command apptable turns the JSON results of the mini-apps (apps/hpcg,
// apps/miniamr, flag -json) into a table shaped like Fig. 11 of the DPML
// paper: per app, process count and layout, every backend's total time,
// time in allreduce, allreduce share of the total, and speedups over the
// native backend (total time and allreduce time). Runs of the same app,
// layout and backend are combined by their median.
//
//	apptable bench/results/apps-2026-11-22/            every *.json in the folder
//	apptable -format md -phase refine a.json b.json    a GitHub table, plus a phase column
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dpmlgo/dpml/apps/internal/report"
)

func main() {
	format := flag.String("format", "text", "text, md or csv")
	phase := flag.String("phase", "", "also show this app phase timer and its speedup (hpcg: ddot, spmv, mg, halo; miniamr: comm, stencil, checksum, refine)")
	app := flag.String("app", "", "only this app")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: apptable [flags] RESULT.json|DIR ...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	f := report.Text
	switch *format {
	case "text":
	case "md", "markdown":
		f = report.Markdown
	case "csv":
		f = report.CSV
	default:
		fmt.Fprintf(os.Stderr, "apptable: -format %q: want text, md or csv\n", *format)
		os.Exit(2)
	}
	rs, skipped, err := report.Load(flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "apptable: %v\n", err)
		os.Exit(1)
	}
	for _, s := range skipped {
		fmt.Fprintf(os.Stderr, "apptable: skipping %s (not a mini-app result)\n", s)
	}
	if *app != "" {
		var keep []report.Result
		for _, r := range rs {
			if r.App == *app {
				keep = append(keep, r)
			}
		}
		rs = keep
	}
	if len(rs) == 0 {
		fmt.Fprintln(os.Stderr, "apptable: no results")
		os.Exit(1)
	}
	fmt.Print(report.Table(report.Rows(rs, *phase), f, *phase))
}
