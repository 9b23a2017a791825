package empicompat_test

import (
	"testing"

	"github.com/dpmlgo/dpml/internal/mpitest"
	mpi "github.com/dpmlgo/dpml/mpi/empicompat"

	dmpi "github.com/dpmlgo/dpml/mpi"
)

func TestMain(m *testing.M) {
	mpi.LogErrors = false
	mpitest.Main(m)
}

func TestSingleton(t *testing.T) {
	if _, err := dmpi.InitThread(dmpi.ThreadSerialized); err != nil {
		t.Fatal(err)
	}
	if !mpi.IsOn() || mpi.WorldSize() < 1 {
		t.Fatal("not on")
	}
	cm, err := mpi.NewComm(nil)
	if err != nil {
		t.Fatal(err)
	}
	orig := []float64{1, 2, 3}
	dest := make([]float64, 3)
	if err := cm.AllReduceF64(mpi.OpSum, dest, orig); err != nil {
		t.Fatal(err)
	}
	if cm.Size() == 1 && dest[2] != 3 {
		t.Fatal(dest)
	}
	ints := []int{5, 6}
	if err := cm.AllReduceInt(mpi.OpMax, ints, ints); err != nil { // same slice: in place
		t.Fatal(err)
	}
	b := []byte{7}
	if err := cm.BcastI8(mpi.Root, b); err != nil || b[0] != 7 {
		t.Fatal(b, err)
	}
	if err := cm.AllReduceF32(mpi.OpBAND, []float32{1}, []float32{1}); err == nil {
		t.Fatal("OpBAND on float32 accepted")
	}
	if err := cm.AllReduceF64(mpi.Op(77), dest, orig); err == nil {
		t.Fatal("Op(77) accepted")
	}
}

func TestMultiRank(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, _ *dmpi.Comm) {
		r, n := mpi.WorldRank(), mpi.WorldSize()
		cm, err := mpi.NewComm(nil)
		if err != nil {
			t.Fatal(err)
		}
		dest := make([]int, 2)
		if err := cm.AllReduceInt(mpi.OpSum, dest, []int{r, 1}); err != nil {
			t.Fatal(err)
		}
		if dest[0] != n*(n-1)/2 || dest[1] != n {
			t.Fatalf("AllReduceInt: %v", dest)
		}
		all := make([]float32, n)
		if err := cm.AllGatherF32(all, []float32{float32(r)}); err != nil {
			t.Fatal(err)
		}
		for i, v := range all {
			if v != float32(i) {
				t.Fatalf("AllGatherF32: %v", all)
			}
		}
		// Sub-communicator of ranks 3 and 1, in that order.
		sub, err := mpi.NewComm([]int{3, 1})
		if err != nil {
			t.Fatal(err)
		}
		switch r {
		case 3, 1:
			if sub.Size() != 2 || sub.Rank() != map[int]int{3: 0, 1: 1}[r] {
				t.Fatalf("sub rank %d size %d", sub.Rank(), sub.Size())
			}
			v := []uint64{uint64(r)}
			if err := sub.ReduceU64(0, mpi.OpMax, v, v); err != nil {
				t.Fatal(err)
			}
			if sub.Rank() == 0 && v[0] != 3 {
				t.Fatalf("ReduceU64: %v", v)
			}
		default:
			if sub.Rank() != -1 || sub.Barrier() == nil {
				t.Fatal("non-member can use sub")
			}
		}
		if r == 0 {
			if err := cm.SendC128(1, 4, []complex128{1 + 2i}); err != nil {
				t.Fatal(err)
			}
		} else if r == 1 {
			v := make([]complex128, 1)
			if err := cm.RecvC128(0, 4, v); err != nil || v[0] != 1+2i {
				t.Fatal(v, err)
			}
		}
	})
}
