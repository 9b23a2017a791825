package dpml

import (
	"runtime"
	"testing"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// TestHotPathAllocations: every plan (tuned, DPML, Pipelined, cross-memory
// attach, the reduction tree) allocates nothing per call once warm: Pipelined reuses its MPI
// requests, CMA keeps its I/O vectors on the stack, and the tuner's state is
// preallocated. The bound leaves room for a rare allocation (a new tuner
// key's first use), not for one per call.
func TestHotPathAllocations(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		buf := make([]float64, 1024)
		cases := []struct {
			o   Override
			max float64
		}{
			{Override{}, 0.5}, {Override{Leaders: 2}, 0.5},
			{Override{Leaders: 2, Pipeline: 2}, 0.5}, {Override{Leaders: 2, Pipeline: 4}, 0.5},
			{Override{Leaders: 2, Intra: IntraCMA}, 0.5},
			{Override{Variant: DPML, Leaders: 2, Inter: plan.InterRing}, 0.5},
			{Override{Leaders: 2, Pipeline: 4, Inter: plan.InterRing}, 0.5},
			// The tree through the executor's steps (the C folds): one
			// tree, and two over partitions.
			{Override{Variant: DPML, Intra: IntraTree}, 0.5},
			{Override{Variant: DPML, Intra: IntraTree, Leaders: 2}, 0.5},
		}
		for _, tc := range cases {
			for i := 0; i < 300; i++ {
				if err := AllreduceInPlaceWith(c, buf, mpi.OpSum, tc.o); err != nil {
					t.Fatal(err)
				}
			}
			var a, b runtime.MemStats
			runtime.ReadMemStats(&a)
			for i := 0; i < 1000; i++ {
				if err := AllreduceInPlaceWith(c, buf, mpi.OpSum, tc.o); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&b)
			per := float64(b.Mallocs-a.Mallocs) / 1000
			if tc.max >= 0 && per > tc.max {
				t.Errorf("%+v: %.2f allocations per call, want <= %v", tc.o, per, tc.max)
			}
			if w.Rank() == 0 {
				t.Logf("%+v: %.2f allocations per call", tc.o, per)
			}
		}
	})
}
