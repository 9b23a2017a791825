// Command dpmlrun runs an MPI program on an emulated cluster on one host:
// each fake node is an Open MPI daemon in its own UTS namespace (hostname
// node1, node2, ...) pinned to its own cores, so MPI sees several nodes
// (shared memory inside a fake node, TCP over loopback between them).
//
//	dpmlrun -nodes 2 -ppn 2 -- ./prog args...
//	dpmlrun -nodes 2 -ppn 3,2 -- ./prog               # uneven: 3 ranks on node1, 2 on node2
//	dpmlrun -nodes 2 -ppn 2 -- --tag-output -- ./prog # extra mpirun arguments between two --
//	dpmlrun -hostfile hosts -ppn 28 -- ./prog         # real cluster: plain mpirun
//
// The ranks get DPML_RUN_NODES, DPML_RUN_PPN and DPML_JOB (a random job
// token). After mpirun exits, dpmlrun removes /dev/shm/dpml-<token>* and
// Open MPI's session files of the job, so even a crashed run leaves nothing
// behind. dpmlrun exits with mpirun's exit code. It needs Open MPI's
// mpirun, unshare and taskset (util-linux), and root or unprivileged user
// namespaces. -v prints the mpirun command; -print-layout prints the
// layout and the command without running anything.
//
// Open MPI starts each fake node's daemon through dpmlrun itself, run as
// its rsh launch agent ("dpmlrun __dpmlrun_agent__ [ssh options] host
// command").
package main

import (
	"os"

	"github.com/dpmlgo/dpml/internal/launch"
)

func main() {
	launch.Dispatch(os.Args)
	os.Exit(launch.Main(os.Args[1:], os.Stdout, os.Stderr))
}
