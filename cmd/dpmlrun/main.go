// Command dpmlrun runs an MPI program on an emulated cluster on one host:
// each fake node is an MPI launch daemon (Open MPI's orted, or MPICH's
// hydra_pmi_proxy) in its own UTS namespace (hostname node1, node2, ...)
// pinned to its own cores, so MPI sees several nodes (Open MPI: shared
// memory inside a fake node, TCP over loopback between them; MPICH: its
// shared memory inside a node, UCX between nodes).
//
//	dpmlrun -nodes 2 -ppn 2 -- ./prog args...
//	dpmlrun -nodes 2 -ppn 3,2 -- ./prog               # uneven: 3 ranks on node1, 2 on node2
//	dpmlrun -nodes 2 -ppn 2 -- --tag-output -- ./prog # extra mpirun arguments between two --
//	dpmlrun -hostfile hosts -ppn 28 -- ./prog         # real cluster: plain mpirun
//	dpmlrun -mpi mpich -nodes 2 -ppn 2 -- ./prog      # MPICH's Hydra mpiexec
//
// The ranks get DPML_RUN_NODES, DPML_RUN_PPN and DPML_JOB (a random job
// token). After mpirun exits, dpmlrun removes /dev/shm/dpml-<token>* and
// Open MPI's session files of the job, so even a crashed run leaves nothing
// behind. A dpmlrun killed with SIGKILL leaves them; the next start removes
// them, knowing its user's jobs from a private state directory
// ($TMPDIR/dpmlrun-state-<uid>, mode 0700) and removing only entries that
// user owns. dpmlrun exits with mpirun's exit code. It needs Open MPI's
// mpirun or MPICH's mpiexec.hydra, unshare and taskset (util-linux), and
// root or unprivileged user namespaces. -v prints the mpirun command;
// -print-layout prints the layout and the command without running anything.
//
// -mpi openmpi|mpich picks the launcher; by default (auto) dpmlrun reads
// which MPI the program and the -preload libraries link (libmpi.so.40:
// Open MPI; libmpich.so.12 or libmpi.so.12: the MPICH ABI), refuses a mix,
// and otherwise uses the MPI it was built for (bin/mpich/dpmlrun: MPICH).
//
// Open MPI starts each fake node's daemon through dpmlrun itself, run as
// its rsh launch agent ("dpmlrun __dpmlrun_agent__ [ssh options] host
// command"). Hydra does the same through -launcher ssh -launcher-exec, a
// two-line script in the job's directory that calls dpmlrun as the agent;
// MPICH groups ranks into nodes by Hydra's host list, and the UTS namespace
// makes each rank's processor name its fake node's. When the ranks outnumber
// the cores, MPICH ranks get a small preloaded shim that yields the CPU when
// MPICH's progress loop finds nothing to do (MPICH has no setting for it).
package main

import (
	"os"

	"github.com/dpmlgo/dpml/internal/tools/launch"
)

func main() {
	launch.Dispatch(os.Args)
	os.Exit(launch.Main(os.Args[1:], os.Stdout, os.Stderr))
}
