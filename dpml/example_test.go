package dpml_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/mpi"
)

// A complete program: initialize MPI, build the communicator once, reduce,
// close it before MPI is finalized. Run it with mpirun or dpmlrun; here it
// runs on one rank, so the sum is the rank's own data.
func Example() {
	// In main, once; calling it again returns at once.
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	// defer mpi.Finalize() in main (the test harness finalizes here).
	world := mpi.World()

	c, err := dpml.New(world) // collective: every rank calls it; reuse c
	if err != nil {
		log.Fatal(err) // the same error on every rank
	}
	defer c.Close()

	send := []float64{1, 2, 3}
	recv := make([]float64, len(send))
	if err := dpml.Allreduce(c, send, recv, mpi.OpSum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(world.Size(), "rank(s):", recv)
	// Output: 1 rank(s): [1 2 3]
}

// Allreduce is generic over mpi.Number: the element type picks the MPI
// datatype, and the op must be one the type takes (mpi.CheckOp).
func ExampleAllreduce() {
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	c, err := dpml.New(mpi.World())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	counts := []int64{10, 20}
	total := make([]int64, 2)
	if err := dpml.Allreduce(c, counts, total, mpi.OpSum); err != nil {
		log.Fatal(err)
	}
	peaks := []float32{0.5, 2.5}
	highest := make([]float32, 2)
	if err := dpml.Allreduce(c, peaks, highest, mpi.OpMax); err != nil {
		log.Fatal(err)
	}
	flags := []uint8{0b0101, 0b0011}
	if err := dpml.AllreduceInPlace(c, flags, mpi.OpBor); err != nil {
		log.Fatal(err)
	}
	fmt.Println(total, highest, flags)
	// Output: [10 20] [0.5 2.5] [5 3]
}

// A call can force parts of its plan (the same Override on every rank);
// zero fields stay the engine's choice. Plan specs are the same grammar
// as DPMLX_Set_plan's from C.
func ExampleAllreduceWith() {
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	c, err := dpml.New(mpi.World())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	send := make([]float64, 1<<16)
	recv := make([]float64, len(send))
	for i := range send {
		send[i] = 1
	}
	// Two leaders per node, each pipelining its part in 4 sub-chunks.
	o := dpml.Override{Variant: dpml.Pipelined, Leaders: 2, Pipeline: 4}
	if err := dpml.AllreduceWith(c, send, recv, mpi.OpSum, o); err != nil {
		log.Fatal(err)
	}
	fmt.Println(o.Spec(), recv[0])

	o, err = dpml.ParseOverride("dpml:l=4,intra=cma")
	fmt.Println(o.Spec(), err)
	// Output:
	// pipelined:l=2,k=4 1
	// dpml:l=4,intra=cma <nil>
}

// Errors are values: setup fails the same way on every rank, and each
// error wraps a sentinel to test with errors.Is.
func ExampleNew_errors() {
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	// A nil communicator (mpi.World before mpi.Init is nil).
	_, err := dpml.New(nil)
	fmt.Println(errors.Is(err, dpml.ErrSetup))

	c, err := dpml.New(mpi.World())
	if err != nil {
		log.Fatal(err)
	}
	// Buffers of different lengths: an error, nothing sent.
	err = dpml.Allreduce(c, make([]float64, 3), make([]float64, 2), mpi.OpSum)
	fmt.Println(err != nil)

	// A bad plan spec names what is wrong.
	_, err = dpml.ParseOverride("dpml:l=zero")
	fmt.Println(err != nil)

	// Calls after Close.
	c.Close()
	err = dpml.Allreduce(c, []float64{1}, make([]float64, 1), mpi.OpSum)
	fmt.Println(errors.Is(err, dpml.ErrClosed))
	// Output:
	// true
	// true
	// true
	// true
}

// The plan the last call ran prints as its spec, or drawn in full: a Plan
// value prints with its String method.
func ExampleComm_LastPlan() {
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	c, err := dpml.New(mpi.World())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf := []int32{1, 2, 3, 4}
	if err := dpml.AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
		log.Fatal(err)
	}
	p := c.LastPlan()
	fmt.Println(p.Spec())
	fmt.Print(p)
	// One rank: the MPI library's own allreduce (native) is the plan.

	// Output:
	// native
	// plan native: 4 x 4B on 1 node(s) x ppn 1; phases [native]
}

// A communicator the program makes for a few calls (one per solver phase,
// say) should not pay the engine's setup: with Deferred its first calls
// run on the MPI library, and the engine is set up only once they would
// have taken DPML_SETUP_AFTER (100 ms by default) there.
func ExampleDeferred() {
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	world := mpi.World()
	c, err := dpml.New(world, dpml.Deferred()) // one small collective, no setup
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // nothing to free if it was never set up

	buf := []int32{1, 2, 3}
	if err := dpml.AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(buf, c.LastPlan().Variant == dpml.Native)
	// Output: [1 2 3] true
}

// Agree makes a program's own start-up checks fail together: every rank
// passes its local error and the settings that must match, and gets nil
// everywhere or the same error everywhere, never a rank left waiting in a
// collective the others skipped.
func ExampleAgree() {
	if _, err := mpi.Init(); err != nil {
		log.Fatal(err)
	}
	world := mpi.World()
	// This rank's view of what every rank must share, and whether it
	// could read its input.
	var local error // e.g. os.ReadFile's error
	settings := []dpml.Setting{{Name: "grid", Value: "512x512"}, {Name: "steps", Value: "100"}}
	if err := dpml.Agree(world, local, settings); err != nil {
		log.Fatal(err) // the same text on every rank, naming what differs where
	}
	fmt.Println("agreed")
	// Output: agreed
}
