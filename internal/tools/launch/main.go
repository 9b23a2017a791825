package launch

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dpmlgo/dpml/internal/runtime/version"
)

// MainArg is the hidden first argument that makes a binary embedding this
// package (a test binary importing internal/testkit/mpitest) act as dpmlrun.
const MainArg = "__dpmlrun_main__"

// Dispatch runs the hidden modes: if args[1] is AgentArg or MainArg it
// runs the agent or dpmlrun's command line and exits the process. It
// returns (doing nothing) otherwise. Call it first thing in main, or from
// an init function.
func Dispatch(args []string) {
	if len(args) < 2 {
		return
	}
	switch args[1] {
	case AgentArg:
		os.Exit(AgentMain(args[2:]))
	case MainArg:
		os.Exit(Main(args[2:], os.Stdout, os.Stderr))
	}
}

// Main is dpmlrun's command line (args without the program name); it
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dpmlrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	fs.IntVar(&cfg.Nodes, "nodes", 0, "number of fake nodes (with -hostfile: nodes to use, default all)")
	fs.StringVar(&cfg.PPN, "ppn", "", "ranks per node: P, or a list like 3,2 for uneven nodes")
	fs.IntVar(&cfg.CoresPerNode, "cores-per-node", 0, "cores of each fake node (default max(1, cores/nodes))")
	fs.StringVar(&cfg.Hostfile, "hostfile", "", "real cluster: run plain mpirun with this hostfile (no emulation)")
	fs.StringVar(&cfg.Preload, "preload", "", "library to LD_PRELOAD into the ranks")
	fs.StringVar(&cfg.MPI, "mpi", "auto", "MPI launcher: openmpi (mpirun), mpich (Hydra's mpiexec), or auto: the ABI the program and -preload link against, else "+DefaultMPI)
	fs.BoolVar(&cfg.Verbose, "v", false, "print the mpirun command line")
	fs.BoolVar(&cfg.PrintLayout, "print-layout", false, "print the layout and the mpirun command, run nothing")
	showVersion := fs.Bool("version", false, "print the build (commit, Go release) and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: dpmlrun -nodes H -ppn P [-mpi openmpi|mpich] [-cores-per-node C] [-preload LIB] [-v] [-- mpirun args] -- prog args...\n")
		fmt.Fprintf(stderr, "       dpmlrun -version\n")
		fmt.Fprintf(stderr, "       dpmlrun -hostfile FILE [-nodes H] [-ppn P] [-mpi openmpi|mpich] [-v] [-- mpirun args] -- prog args...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("dpmlrun"))
		return 0
	}
	// An explicit -nodes must be at least 1 (0 is only the unset default).
	nodesSet := false
	fs.Visit(func(f *flag.Flag) { nodesSet = nodesSet || f.Name == "nodes" })
	if nodesSet && cfg.Nodes < 1 {
		fmt.Fprintf(stderr, "dpmlrun: -nodes %d: must be at least 1\n", cfg.Nodes)
		return 2
	}
	cfg.Extra, cfg.Prog = SplitArgs(fs.Args())
	if len(cfg.Prog) == 0 {
		fmt.Fprintln(stderr, "dpmlrun: no program to run: put it last, after --")
		fs.Usage()
		return 2
	}
	cfg.Stdout, cfg.Stderr = stdout, stderr
	code, err := Run(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "dpmlrun: %v\n", err)
	}
	return code
}
