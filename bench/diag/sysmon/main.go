// Command sysmon shows the Go runtime's monitor thread (sysmon) at work in
// an MPI rank bound to one core: rank 1 spins for -wait before each
// barrier, so rank 0 sits in a long cgo call (MPI_Barrier) every
// iteration. Rank 0 then reports the context switches of all its threads
// (SYSMON_TASKS=1: per thread, with its wait channel: sysmon sleeps in
// hrtimer_nanosleep):
//
//	go build -o /tmp/sysmon ./bench/diag/sysmon
//	mpirun -np 2 --bind-to core -x SYSMON_TASKS=1 /tmp/sysmon -wait 2ms -iters 200
//
// On the 2-core development machine: 5.9 context switches of the process
// per 2 ms barrier, 0.6 per 20 us barrier, 0.04 with no wait; the same
// with GOMAXPROCS 1 or 2. GOMAXPROCS 2 with -gosched cut sysmon's own
// wake-ups from about 400 to 160 per 200 barriers, but the process's total
// stayed at 5 per barrier.
//
// These numbers are without DPML_GOSCHED: package mpi yields every 5 ms
// and raises GOMAXPROCS 1 to 2 at Init; run with DPML_GOSCHED=off to
// measure without it. bench/diag/gocall is the probe of
// the Go-vs-C call cost, and mpi's package doc explains the mechanism.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dpmlgo/dpml/mpi"
)

func main() {
	iters := flag.Int("iters", 2000, "barriers")
	wait := flag.Duration("wait", 200*time.Microsecond, "rank 1 spins this long before each barrier")
	gosched := flag.Bool("gosched", false, "call runtime.Gosched before each barrier")
	flag.Parse()
	if _, err := mpi.Init(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer mpi.Finalize()
	w := mpi.World()
	before := switches()
	t0 := time.Now()
	for i := 0; i < *iters; i++ {
		if w.Rank() == 1 {
			for s := time.Now(); time.Since(s) < *wait; {
			}
		}
		if *gosched {
			runtime.Gosched()
		}
		if err := w.Barrier(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	el := time.Since(t0)
	after := switches()
	if w.Rank() == 0 && os.Getenv("SYSMON_TASKS") != "" {
		tasks, _ := filepath.Glob("/proc/self/task/*/status")
		for _, p := range tasks {
			b, _ := os.ReadFile(p)
			var out []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "ctxt_switches") {
					out = append(out, strings.Join(strings.Fields(line), " "))
				}
			}
			wchan, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "wchan"))
			fmt.Println(filepath.Base(filepath.Dir(p)), string(wchan), strings.Join(out, "; "))
		}
	}
	if w.Rank() == 0 {
		fmt.Printf("GOMAXPROCS %d: %d barriers in %v; context switches of this process: %d voluntary, %d involuntary (%.2f per barrier)\n",
			runtime.GOMAXPROCS(0), *iters, el.Round(time.Millisecond), after[0]-before[0], after[1]-before[1],
			float64(after[0]-before[0]+after[1]-before[1])/float64(*iters))
	}
}

// switches sums voluntary and involuntary context switches over the
// process's threads.
func switches() [2]int {
	var s [2]int
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for i, key := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				if strings.HasPrefix(line, key) {
					n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, key)))
					s[i] += n
				}
			}
		}
	}
	return s
}
