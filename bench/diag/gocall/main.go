// Command gocall measures what a small MPI_Allreduce costs when a Go
// program calls it, against the same loop in a C program (its twin,
// ctwin/gocall.c, built into bin/gocall-c):
//
//	make build    # bin/gocall and bin/gocall-c
//	mpirun -np 2 --bind-to core --map-by core bin/gocall-c -header
//	mpirun -np 2 --bind-to core --map-by core bin/gocall
//	bin/gocall summary [-min] results/*.csv   # medians (fastest) over repetitions, Go/C ratios (no MPI)
//	bin/gocall version                       # the commit it was built from
//	mpirun -np 2 --bind-to core bin/gocall clock  # ns per clock read, cgo call and gosched.Pace (clock.go)
//
// bench/diag/gocall.sh runs both on the 32-core device (1x32 and 4x8).
//
// # Method
//
// For each repetition, each variant (each repetition starts one variant
// later) and each size (-sizes, bytes: one float64 per 8 bytes, float32
// for 4 B), every rank runs 200 warm-up calls, the ranks agree on an
// iteration count (-time / the warm-up's time per call, within
// -min-iters..-max-iters, the smallest over ranks), then a barrier and
// that many back-to-back calls, timed with MPI_Wtime. Per rank: the
// average time per call, and per call the context switches (voluntary +
// involuntary, /proc/self/task/*/status) of the main thread (the one that
// calls MPI) and of all other threads, the CPU time of the other threads
// and the time the main thread waited runnable for its CPU
// (/proc/self/task/*/schedstat). Rank 0 prints one CSV row per
// measurement: the max over ranks of each, the mean over ranks of the time
// and of the context switches. The C twin prints the same columns.
//
// # Variants
//
//	go         mpi.Allreduce: what every Go program calls
//	go-cwrap   one cgo call per iteration to a C function of this program that calls MPI_Allreduce
//	go-cloop   one cgo call that runs the whole loop in C
//	go-iall    mpi.Iallreduce, then Request.Test until done (Open MPI: libnbc, another algorithm)
//	go-gmpN    mpi.Allreduce with runtime.GOMAXPROCS(N) for the measurement
//	c, c-iall  (bin/gocall-c) the same loops in a C program
//
// -threads prints rank 0's threads after each measurement (to stderr):
// thread id, name, context switches and CPU time during the measurement,
// and the system call each sat in at the end (/proc/.../syscall: 202
// futex, 35 nanosleep, 232 epoll_wait, 7 poll, "running").
package main

// #include "probe.h"
// static int probe_go_threads(probe_thread *t, int max) { return probe_threads(t, max); }
import "C"

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/mpi"
)

// gitCommit is set by make build (-ldflags -X main.gitCommit=...).
var gitCommit string

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Printf("gocall commit %s, %s\n", gitCommit, runtime.Version())
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "clock" {
		if err := clockProbe(2_000_000); err != nil {
			fail("clock: %v", err)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "summary" {
		if err := summary(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "gocall summary:", err)
			os.Exit(1)
		}
		return
	}
	sizesF := flag.String("sizes", "4,8,64,512,4096", "message sizes in bytes (multiples of 4, at most 8192)")
	variantsF := flag.String("variants", "go,go-cwrap,go-cloop,go-iall", "variants, comma-separated (see the package doc)")
	reps := flag.Int("reps", 3, "repetitions")
	budget := flag.Float64("time", 0.1, "target seconds per measurement")
	minIters := flag.Int("min-iters", 1000, "fewest timed calls per measurement")
	maxIters := flag.Int("max-iters", 20000, "most timed calls per measurement")
	label := flag.String("label", "", "text for the label column")
	header := flag.Bool("header", false, "print the CSV header first")
	threads := flag.Bool("threads", false, "print rank 0's threads after each measurement (stderr)")
	flag.IntVar(&spinNs, "spin-ns", 3000, "busy wait of one call of the spin variants, ns")
	traceOut := flag.String("trace", "", "write rank 0's runtime/trace to this file")
	settleF := flag.String("settle", "", "before the first measurement: calls:D (8-byte allreduces for D) or sleep:D (time.Sleep(D)); the first-size transient (mpi's package doc)")
	flag.Parse()

	var sizes []int
	for _, s := range strings.Split(*sizesF, ",") {
		b, err := strconv.Atoi(s)
		if err != nil || b < 4 || b > 8192 || b%4 != 0 {
			fail("size %q: want a multiple of 4 in [4, 8192]", s)
		}
		sizes = append(sizes, b)
	}
	variants := strings.Split(*variantsF, ",")
	for _, v := range variants {
		if _, ok := loops[v]; !ok && !strings.HasPrefix(v, "go-gmp") {
			fail("unknown variant %q", v)
		}
	}

	if _, err := mpi.Init(); err != nil {
		fail("%v", err)
	}
	defer mpi.Finalize()
	// DPML_GOSCHED, as dpml.New applies it.
	if err := gosched.Apply(); err != nil {
		fail("%v", err)
	}
	defer func() {
		if dc != nil {
			dc.Close()
		}
	}()
	w := mpi.World()
	goschedMode := gosched.Sched().Mode
	if *traceOut != "" && w.Rank() == 0 {
		f, err := os.Create(*traceOut)
		must(err)
		must(trace.Start(f))
		defer f.Close()
		defer trace.Stop()
	}
	if w.Rank() == 0 && *header {
		fmt.Println(csvHeader)
	}
	if *settleF != "" {
		must(settle(w, *settleF))
	}
	for rep := 0; rep < *reps; rep++ {
		for k := range variants {
			v := variants[(k+rep)%len(variants)]
			for j, b := range sizes {
				if strings.HasSuffix(v, "-spin") {
					// No message: measured once, at "0 bytes".
					if j > 0 {
						continue
					}
					b = 0
				}
				r := measure(w, v, b, *budget, *minIters, *maxIters, *threads)
				var mx, sum [7]float64
				must(mpi.Reduce(w, r.vals[:], mx[:], mpi.OpMax, 0))
				must(mpi.Reduce(w, r.vals[:], sum[:], mpi.OpSum, 0))
				if w.Rank() == 0 {
					n := float64(w.Size())
					fmt.Printf("go,%s,%d,%d,%s,%s,%d,%d,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.0f\n",
						*label, w.Size(), rep, v, goschedMode, b, r.iters, mx[0], sum[0]/n, mx[1], sum[1]/n, mx[2], mx[3], mx[4], mx[5], mx[6])
				}
			}
		}
	}
}

// settle runs spec (calls:D or sleep:D) between Init and the first
// measurement. Whichever size gocall measures first paid 1.25-1.35x on the
// 16-core node; calls:D shows whether a stretch of ordinary MPI calls
// first removes it (the transient belongs to the time since start), and
// sleep:D whether idle time does the same.
func settle(w *mpi.Comm, spec string) error {
	mode, ds, ok := strings.Cut(spec, ":")
	d, err := time.ParseDuration(ds)
	if !ok || err != nil || d < 0 {
		return fmt.Errorf("-settle %q: want calls:DURATION or sleep:DURATION", spec)
	}
	switch mode {
	case "sleep":
		time.Sleep(d)
		return w.Barrier()
	case "calls":
		// Rank 0 decides when D has passed: every rank stops at the
		// same call.
		t0 := time.Now()
		done := []int32{0}
		for {
			if w.Rank() == 0 && time.Since(t0) >= d {
				done[0] = 1
			}
			if err := mpi.AllreduceInPlace(w, done, mpi.OpMax); err != nil {
				return err
			}
			if done[0] != 0 {
				return nil
			}
		}
	}
	return fmt.Errorf("-settle %q: mode %q: want calls or sleep", spec, mode)
}

const csvHeader = "prog,label,ranks,rep,variant,gosched,bytes,iters,us_max,us_mean,cs_max,cs_mean,main_cs_max,other_cs_max,other_run_us_max,main_wait_us_max,threads"

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "gocall: "+format+"\n", a...)
	if mpi.Initialized() && !mpi.Finalized() {
		mpi.Abort(nil, 2)
	}
	os.Exit(2)
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

// bufs holds the messages: float64 for sizes that are multiples of 8,
// float32 otherwise.
type bufs struct {
	s64, r64 []float64
	s32, r32 []float32
}

func newBufs(bytes int) *bufs {
	b := &bufs{}
	if bytes == 0 {
		return b
	}
	if bytes%8 == 0 {
		b.s64, b.r64 = make([]float64, bytes/8), make([]float64, bytes/8)
		for i := range b.s64 {
			b.s64[i] = 1
		}
	} else {
		b.s32, b.r32 = make([]float32, bytes/4), make([]float32, bytes/4)
		for i := range b.s32 {
			b.s32[i] = 1
		}
	}
	return b
}

func (b *bufs) ptrs() (unsafe.Pointer, unsafe.Pointer) {
	if b.s64 != nil {
		return unsafe.Pointer(&b.s64[0]), unsafe.Pointer(&b.r64[0])
	}
	return unsafe.Pointer(&b.s32[0]), unsafe.Pointer(&b.r32[0])
}

// check: every element of the result is the number of ranks (nothing to
// check for the spin variants).
func (b *bufs) check(size int) error {
	want := float64(size)
	for _, x := range b.r64 {
		if x != want {
			return fmt.Errorf("result %v, want %v", x, want)
		}
	}
	for _, x := range b.r32 {
		if float64(x) != want {
			return fmt.Errorf("result %v, want %v", x, want)
		}
	}
	return nil
}

type loop func(w *mpi.Comm, b *bufs, bytes, iters int) error

var loops = map[string]loop{
	"go":         loopGo,
	"go-cwrap":   loopCwrap,
	"go-cloop":   loopCloop,
	"go-iall":    loopIall,
	"go-dpml":    loopDpml,
	"go-spin":    loopSpin,
	"go-floor":   loopFloor,
	"go-floor-w": loopFloorW,
}

// spinNs is the busy wait of one go-spin call (-spin-ns).
var spinNs int

// loopSpin makes one cgo call per iteration to a C function that
// busy-waits spinNs: an MPI call without the other ranks. It calls
// gosched.Pace before each, as the package's MPI calls do.
func loopSpin(w *mpi.Comm, b *bufs, bytes, iters int) error {
	for i := 0; i < iters; i++ {
		gosched.Pace()
		C.probe_spin(C.long(spinNs))
	}
	return nil
}

func loopGo(w *mpi.Comm, b *bufs, bytes, iters int) error {
	if b.s64 != nil {
		for i := 0; i < iters; i++ {
			if err := mpi.Allreduce(w, b.s64, b.r64, mpi.OpSum); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		if err := mpi.Allreduce(w, b.s32, b.r32, mpi.OpSum); err != nil {
			return err
		}
	}
	return nil
}

// dc is the DPML communicator of go-dpml, made on first use (collective:
// every rank reaches the same first go-dpml measurement).
var dc *dpml.Comm

func loopDpml(w *mpi.Comm, b *bufs, bytes, iters int) error {
	if dc == nil {
		c, err := dpml.New(w)
		if err != nil {
			return err
		}
		dc = c
	}
	if b.s64 != nil {
		for i := 0; i < iters; i++ {
			if err := dpml.Allreduce(dc, b.s64, b.r64, mpi.OpSum); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		if err := dpml.Allreduce(dc, b.s32, b.r32, mpi.OpSum); err != nil {
			return err
		}
	}
	return nil
}

func loopCwrap(w *mpi.Comm, b *bufs, bytes, iters int) error {
	s, r := b.ptrs()
	for i := 0; i < iters; i++ {
		if rc := C.probe_one_block(s, r, C.int(bytes)); rc != 0 {
			return fmt.Errorf("MPI_Allreduce: error %d", rc)
		}
	}
	return nil
}

func loopCloop(w *mpi.Comm, b *bufs, bytes, iters int) error {
	s, r := b.ptrs()
	if rc := C.probe_loop_block(s, r, C.int(bytes), C.long(iters)); rc != 0 {
		return fmt.Errorf("MPI_Allreduce: error %d", rc)
	}
	return nil
}

func loopIall(w *mpi.Comm, b *bufs, bytes, iters int) error {
	var req mpi.Request
	for i := 0; i < iters; i++ {
		var err error
		if b.s64 != nil {
			copy(b.r64, b.s64)
			err = mpi.IallreduceInPlaceReq(w, b.r64, mpi.OpSum, &req)
		} else {
			copy(b.r32, b.s32)
			err = mpi.IallreduceInPlaceReq(w, b.r32, mpi.OpSum, &req)
		}
		if err != nil {
			return err
		}
		for {
			done, err := req.Test()
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	return nil
}

type result struct {
	iters int
	// time per call (us), context switches per call (all, main thread,
	// other threads), CPU time of the other threads per call (us), the
	// main thread's runnable wait per call (us), threads
	vals [7]float64
}

func measure(w *mpi.Comm, v string, bytes int, budget float64, minIters, maxIters int, showThreads bool) result {
	run := loops[v]
	if strings.HasPrefix(v, "go-gmp") {
		run = loopGo
		n, err := strconv.Atoi(strings.TrimPrefix(v, "go-gmp"))
		if err != nil || n < 1 {
			fail("variant %s: want go-gmpN, N >= 1", v)
		}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	b := newBufs(bytes)
	const warm = 200
	must(w.Barrier())
	t0 := mpi.Wtime()
	must(run(w, b, bytes, warm))
	per := (mpi.Wtime() - t0) / warm
	iters := maxIters
	if per > 0 {
		iters = int(budget / per)
	}
	iters = max(minIters, min(maxIters, iters))
	it := []int64{int64(iters)}
	must(mpi.AllreduceInPlace(w, it, mpi.OpMin))
	iters = int(it[0])
	must(w.Barrier())
	before := snapshot()
	t0 = mpi.Wtime()
	must(run(w, b, bytes, iters))
	el := mpi.Wtime() - t0
	after := snapshot()
	if err := b.check(w.Size()); err != nil {
		fail("variant %s, %d B: %v", v, bytes, err)
	}
	a, z := totals(before), totals(after)
	n := float64(iters)
	r := result{iters: iters}
	r.vals = [7]float64{
		el / n * 1e6,
		float64(z.mainCS-a.mainCS+z.otherCS-a.otherCS) / n,
		float64(z.mainCS-a.mainCS) / n,
		float64(z.otherCS-a.otherCS) / n,
		float64(z.otherRun-a.otherRun) / n / 1e3,
		float64(z.mainWait-a.mainWait) / n / 1e3,
		float64(len(after)),
	}
	if showThreads && w.Rank() == 0 {
		printThreads(v, bytes, iters, before, after)
	}
	return r
}

type thread struct {
	tid, vol, invol, run, wait int64
	comm, sys                  string
}

func snapshot() []thread {
	var t [256]C.probe_thread
	n := int(C.probe_go_threads(&t[0], C.int(len(t))))
	out := make([]thread, n)
	for i := range out {
		p := &t[i]
		out[i] = thread{
			tid: int64(p.tid), vol: int64(p.vol), invol: int64(p.invol),
			run: int64(p.run_ns), wait: int64(p.wait_ns),
			comm: C.GoString(&p.comm[0]), sys: C.GoString(&p.sys[0]),
		}
	}
	return out
}

type sums struct{ mainCS, otherCS, otherRun, mainWait int64 }

func totals(ts []thread) sums {
	var s sums
	pid := int64(os.Getpid())
	for _, t := range ts {
		if t.tid == pid {
			s.mainCS += t.vol + t.invol
			s.mainWait += t.wait
		} else {
			s.otherCS += t.vol + t.invol
			s.otherRun += t.run
		}
	}
	return s
}

func printThreads(v string, bytes, iters int, before, after []thread) {
	old := map[int64]thread{}
	for _, t := range before {
		old[t.tid] = t
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# rank 0 threads, %s %d B, %d calls: tid comm vol invol run_us (per 1000 calls) syscall-at-end\n", v, bytes, iters)
	k := 1000 / float64(iters)
	for _, t := range after {
		o := old[t.tid] // zero for a thread born during the measurement
		fmt.Fprintf(&sb, "#   %d %s %.2f %.2f %.1f %s\n", t.tid, t.comm,
			float64(t.vol-o.vol)*k, float64(t.invol-o.invol)*k, float64(t.run-o.run)/1e3*k, t.sys)
	}
	os.Stderr.WriteString(sb.String())
}
