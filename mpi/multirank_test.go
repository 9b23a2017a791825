package mpi_test

import (
	"fmt"
	"testing"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// Multi-rank tests: each runs its body on nodes x ppn ranks over fake nodes
// (internal/testkit/mpitest); in the ranks only the launched test runs.

var layouts = [][2]int{{2, 1}, {2, 2}}

func forLayouts(t *testing.T, body func(t *testing.T, w *mpi.Comm, nodes, ppn int)) {
	for _, l := range layouts {
		nodes, ppn := l[0], l[1]
		t.Run(fmt.Sprintf("%dx%d", nodes, ppn), func(t *testing.T) {
			mpitest.Run(t, nodes, ppn, func(t *testing.T, w *mpi.Comm) {
				body(t, w, nodes, ppn)
			})
		})
	}
}

// Every op x type against the Go reference, through every entry point
// (Allreduce, InPlace, Iallreduce, IallreduceInPlace, Reduce, ReduceInPlace),
// plus Bcast, Allgather and Send/Recv/Isend/Irecv around a ring.
func TestMultiRankOpsAllTypes(t *testing.T) {
	forLayouts(t, func(t *testing.T, w *mpi.Comm, nodes, ppn int) {
		if w.Size() != nodes*ppn {
			t.Fatalf("world size %d, want %d", w.Size(), nodes*ppn)
		}
		forEachType(t, w, allChecks)
	})
}

func TestMultiRankSplit(t *testing.T) {
	forLayouts(t, func(t *testing.T, w *mpi.Comm, nodes, ppn int) {
		rank, size := w.Rank(), w.Size()

		// One shared-memory communicator per fake node; ranks are numbered
		// node by node.
		sh, err := w.SplitShared(rank)
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Free()
		if sh.Size() != ppn || sh.Rank() != rank%ppn {
			t.Fatalf("SplitShared: rank %d of %d, want %d of %d", sh.Rank(), sh.Size(), rank%ppn, ppn)
		}
		// Its members are exactly this node's ranks.
		members := make([]int32, ppn)
		if err := mpi.Allgather(sh, []int32{int32(rank)}, members); err != nil {
			t.Fatal(err)
		}
		for i, m := range members {
			if int(m) != rank/ppn*ppn+i {
				t.Fatalf("SplitShared members %v", members)
			}
		}

		// Even/odd split, reversed key order.
		eo, err := w.Split(rank%2, -rank)
		if err != nil {
			t.Fatal(err)
		}
		defer eo.Free()
		wantSize := (size + 1 - rank%2) / 2
		if eo.Size() != wantSize || eo.Rank() != wantSize-1-rank/2 {
			t.Fatalf("Split(rank%%2): rank %d of %d, want %d of %d", eo.Rank(), eo.Size(), wantSize-1-rank/2, wantSize)
		}
		sum := []int64{int64(rank)}
		if err := mpi.AllreduceInPlace(eo, sum, mpi.OpSum); err != nil {
			t.Fatal(err)
		}
		var want int64
		for r := rank % 2; r < size; r += 2 {
			want += int64(r)
		}
		if sum[0] != want {
			t.Fatalf("sum over split: %d, want %d", sum[0], want)
		}

		// Node leaders: local rank 0 of each node; the rest get nil.
		color := mpi.Undefined
		if sh.Rank() == 0 {
			color = 0
		}
		lead, err := w.Split(color, rank)
		if err != nil {
			t.Fatal(err)
		}
		if sh.Rank() == 0 {
			if lead == nil || lead.Size() != nodes || lead.Rank() != rank/ppn {
				t.Fatalf("leaders comm %v, want rank %d of %d", lead, rank/ppn, nodes)
			}
			if err := lead.Barrier(); err != nil {
				t.Fatal(err)
			}
			if err := lead.Free(); err != nil {
				t.Fatal(err)
			}
		} else if lead != nil {
			t.Fatalf("non-leader got %v, want nil", lead)
		}

		// Dup and the Fortran/C handle round trips keep rank and size.
		d, err := w.Dup()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free()
		f := mpi.CommFromFint(d.Fint())
		h := mpi.CommFromC(d.Handle())
		if f == nil || h == nil || f.Rank() != rank || f.Size() != size || h.Rank() != rank || h.Size() != size {
			t.Fatalf("round trips: %v %v", f, h)
		}
		x := []float64{float64(rank + 1)}
		if err := mpi.AllreduceInPlace(f, x, mpi.OpProd); err != nil {
			t.Fatal(err)
		}
		fact := 1.0
		for r := 1; r <= size; r++ {
			fact *= float64(r)
		}
		if x[0] != fact {
			t.Fatalf("prod over CommFromFint: %v, want %v", x[0], fact)
		}
	})
}

// Several non-blocking reductions in flight at once, on two communicators,
// completed by Waitall and by polling Test.
func TestMultiRankIallreduce(t *testing.T) {
	forLayouts(t, func(t *testing.T, w *mpi.Comm, nodes, ppn int) {
		rank, size := w.Rank(), w.Size()
		d, err := w.Dup()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free()
		const k, n = 6, 4096
		var reqs []*mpi.Request
		outs := make([][]float64, k)
		bufs := make([][]int32, k)
		for i := range k {
			send := input[float64](mpi.OpSum, rank+i, n)
			outs[i] = make([]float64, n)
			r, err := mpi.Iallreduce(w, send, outs[i], mpi.OpSum)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, r)
			bufs[i] = input[int32](mpi.OpMax, rank+i, n)
			r, err = mpi.IallreduceInPlace(d, bufs[i], mpi.OpMax)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, r)
		}
		// Poll the first one, Waitall the rest (completed ones are skipped).
		for {
			done, err := reqs[0].Test()
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
		}
		if err := mpi.Waitall(reqs); err != nil {
			t.Fatal(err)
		}
		for i := range k {
			// Rank r contributed input(rank+i): the reference over ranks
			// i..i+size-1.
			wantF := make([]float64, n)
			wantI := make([]int32, n)
			for r := range size {
				f := input[float64](mpi.OpSum, r+i, n)
				m := input[int32](mpi.OpMax, r+i, n)
				for j := range n {
					wantF[j] += f[j]
					if r == 0 || m[j] > wantI[j] {
						wantI[j] = m[j]
					}
				}
			}
			equal(t, fmt.Sprintf("Iallreduce %d", i), outs[i], wantF)
			equal(t, fmt.Sprintf("IallreduceInPlace %d", i), bufs[i], wantI)
		}
	})
}

func TestMultiRankArgErrors(t *testing.T) {
	forLayouts(t, func(t *testing.T, w *mpi.Comm, nodes, ppn int) {
		checkArgErrors(t, w)
		// The failed calls made no MPI call, so the ranks are still in step.
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		sh, err := w.SplitShared(0)
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Free()
		checkArgErrors(t, sh)
	})
}

func TestSplitByHost(t *testing.T) {
	mpitest.RunLayout(t, mpitest.Layout{PPN: []int{3, 2}}, func(t *testing.T, w *mpi.Comm) {
		h, err := w.SplitByHost(w.Rank())
		if err != nil {
			t.Fatal(err)
		}
		defer h.Free()
		s, err := w.SplitShared(w.Rank())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Free()
		if h.Size() != s.Size() || h.Rank() != s.Rank() {
			t.Fatalf("by host: rank %d of %d; shared: rank %d of %d", h.Rank(), h.Size(), s.Rank(), s.Size())
		}
		want := 3
		if w.Rank() >= 3 {
			want = 2
		}
		if h.Size() != want {
			t.Fatalf("rank %d: host group of %d, want %d", w.Rank(), h.Size(), want)
		}
	})
}
