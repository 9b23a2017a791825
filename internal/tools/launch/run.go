package launch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Config is what the dpmlrun command line asks for.
type Config struct {
	Nodes        int    // -nodes (0: from -ppn list, or the hostfile)
	PPN          string // -ppn ("2" or "3,2")
	CoresPerNode int    // -cores-per-node
	Hostfile     string // -hostfile: real cluster, plain mpirun
	MPI          string // -mpi: openmpi, mpich, or auto ("")
	Preload      string // -preload
	Verbose      bool   // -v: print the mpirun command
	PrintLayout  bool   // -print-layout: print layout and command, run nothing
	Extra        []string
	Prog         []string
	// ExportEnv are extra variable names passed to the ranks with -x.
	ExportEnv []string
	Stdout    io.Writer // mpirun's stdout and -print-layout (default os.Stdout)
	Stderr    io.Writer // mpirun's stderr and messages (default os.Stderr)
}

// KillGrace is how long dpmlrun waits after forwarding a signal to mpirun
// before it kills mpirun's process group.
const KillGrace = 5 * time.Second

// Run launches the job and returns the exit code dpmlrun should exit with.
// Problems found before mpirun starts come back as an error (exit code 2
// is appropriate).
func Run(cfg Config) (int, error) {
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	stdout := cfg.Stdout
	if stdout == nil {
		stdout = os.Stdout
	}
	emulate := cfg.Hostfile == ""

	var ppn []int
	var err error
	nodes := cfg.Nodes
	if cfg.PPN != "" {
		if !emulate && nodes == 0 {
			nodes, err = countHosts(cfg.Hostfile)
			if err != nil {
				return 2, err
			}
		}
		ppn, err = ParsePPN(nodes, cfg.PPN)
		if err != nil {
			return 2, err
		}
		if emulate {
			nodes = len(ppn)
		}
	} else if emulate {
		return 2, fmt.Errorf("-ppn is required (ranks per fake node, e.g. -ppn 2 or -ppn 3,2)")
	}

	if cfg.Preload != "" {
		p, err := checkPreload(cfg.Preload)
		if err != nil {
			return 2, err
		}
		cfg.Preload = p
	}

	explicit, err := ParseFlavor(cfg.MPI)
	if err != nil {
		return 2, err
	}
	flavor, err := ResolveFlavor(explicit, cfg.Prog, cfg.Preload)
	if err != nil {
		return 2, err
	}
	var mpirun string
	if flavor == MPICH {
		mpirun, err = CheckMpiexec()
		if mpirun == "" {
			mpirun = "mpiexec.hydra"
		}
	} else {
		mpirun, err = CheckMpirun()
		if mpirun == "" {
			mpirun = "mpirun"
		}
	}
	if err != nil && !cfg.PrintLayout {
		return 2, err
	}
	if emulate && !cfg.PrintLayout {
		if err := CheckNamespaces(); err != nil {
			return 2, err
		}
	}

	job, err := NewJobToken()
	if err != nil {
		return 2, err
	}
	o := Options{
		Flavor:       flavor,
		Mpirun:       mpirun,
		PPN:          ppn,
		Nodes:        nodes,
		CoresPerNode: cfg.CoresPerNode,
		HostCPUs:     HostCPUs(),
		Hostfile:     cfg.Hostfile,
		Preload:      cfg.Preload,
		Extra:        cfg.Extra,
		Prog:         cfg.Prog,
		Root:         os.Geteuid() == 0,
		Job:          job,
		ExportEnv:    cfg.ExportEnv,
	}
	var tmpBase, vaderDir string
	if emulate {
		exe, err := os.Executable()
		if err != nil {
			return 2, fmt.Errorf("cannot find dpmlrun's own path for the launch agent: %v", err)
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return 2, err
		}
		o.Agent = exe + " " + AgentArg
		over := false
		if flavor == MPICH && len(ppn) > 0 {
			if _, _, ov, err := AssignCPUs(o.HostCPUs, ppn, cfg.CoresPerNode); err == nil {
				over = ov
			}
		}
		if !cfg.PrintLayout {
			// Session directories and vader's backing files go into
			// directories of this job, removed at exit even after a crash.
			if _, err := SweepStale(); err != nil {
				fmt.Fprintf(stderr, "dpmlrun: warning: %v: stale jobs are not swept\n", err)
			}
			tmpBase, err = os.MkdirTemp("", "dpmlrun-"+job+"-")
			if err != nil {
				return 2, err
			}
			defer os.RemoveAll(tmpBase)
			// Marks the job as alive for SweepStale of later runs.
			if release, err := markAlive(job, tmpBase); err != nil {
				fmt.Fprintf(stderr, "dpmlrun: warning: %v: a later run cannot sweep this job if it is killed\n", err)
			} else {
				defer release()
			}
			if flavor == MPICH {
				// Hydra's launcher executable: one file (see
				// HydraAgentScript), gone with the job's directory.
				o.AgentExec = filepath.Join(tmpBase, "hydra-agent")
				if err := os.WriteFile(o.AgentExec, []byte(HydraAgentScript(exe)), 0o700); err != nil {
					return 2, fmt.Errorf("write the launch agent: %w", err)
				}
				if over {
					lib, err := YieldLib(yieldDir())
					if err != nil {
						fmt.Fprintf(stderr, "dpmlrun: warning: %v; oversubscribed MPICH ranks will busy-wait (slow, but correct)\n", err)
					}
					o.YieldLib = lib
				}
			} else if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
				vaderDir = filepath.Join("/dev/shm", "dpml-"+job+"-ompi")
				if err := os.Mkdir(vaderDir, 0o700); err != nil {
					return 2, err
				}
			}
			o.TmpBase, o.VaderDir = tmpBase, vaderDir
		} else {
			o.TmpBase = filepath.Join(os.TempDir(), "dpmlrun-"+job+"-XXXX")
			if flavor == MPICH {
				o.AgentExec = filepath.Join(o.TmpBase, "hydra-agent")
				if over {
					o.YieldLib = yieldPath(yieldDir())
				}
			} else {
				o.VaderDir = filepath.Join("/dev/shm", "dpml-"+job+"-ompi")
			}
		}
	}
	defer SweepJob(job)

	plan, err := Build(o)
	if err != nil {
		return 2, err
	}
	if cfg.PrintLayout {
		printLayout(stdout, plan, o)
		return 0, nil
	}
	if cfg.Verbose {
		env := ""
		if len(plan.Env) > 0 {
			env = ShellQuote(plan.Env) + " "
		}
		fmt.Fprintf(stderr, "dpmlrun: %s%s\n", env, ShellQuote(plan.Argv))
	}
	return execMpirun(plan, stdout, stderr)
}

func printLayout(w io.Writer, plan *Plan, o Options) {
	if o.Hostfile == "" {
		fmt.Fprintf(w, "fake nodes: %d, ranks: %d, cores per node: %d, oversubscribed: %v\n",
			len(plan.Hosts), plan.Ranks, plan.CoresPerNode, plan.Oversubscribed)
		r := 0
		for i, h := range plan.Hosts {
			fmt.Fprintf(w, "  %-8s ranks %d-%d  cpus %s\n", h, r, r+o.PPN[i]-1, FormatCPUList(plan.CPUs[i]))
			r += o.PPN[i]
		}
	}
	env := ""
	if len(plan.Env) > 0 {
		env = ShellQuote(plan.Env) + " "
	}
	fmt.Fprintf(w, "%s%s\n", env, ShellQuote(plan.Argv))
}

func execMpirun(plan *Plan, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(plan.Argv[0], plan.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(os.Environ(), plan.Env...)
	// Own process group: a terminal's Ctrl-C reaches dpmlrun only, which
	// forwards one signal (two SIGINTs make mpirun skip its cleanup).
	// Pdeathsig: if dpmlrun is killed, mpirun is told to stop too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}

	// Pdeathsig fires when the thread that started mpirun exits; keep
	// this goroutine on that thread until mpirun is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		return 2, fmt.Errorf("start %s: %v", plan.Argv[0], err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var kill <-chan time.Time
	var werr error
	var got os.Signal // the first signal forwarded
loop:
	for {
		select {
		case werr = <-done:
			break loop
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
			if got == nil {
				got = s
			}
			if kill == nil {
				kill = time.After(KillGrace)
			}
		case <-kill:
			fmt.Fprintf(stderr, "dpmlrun: mpirun did not stop %v after the signal; killing it\n", KillGrace)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	if sig, ok := got.(syscall.Signal); ok {
		// Stopped by a signal: exit as a shell reports it (SIGINT: 130),
		// whatever mpirun's own status after its clean-up was.
		if werr != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		return 128 + int(sig), nil
	}
	if werr == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Whatever mpirun left in its process group goes too.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 2, werr
}

// checkPreload checks that each library of -preload (a colon-separated
// list, as LD_PRELOAD takes) is a readable regular ELF file (a missing one
// made the dynamic loader print a warning per rank and run the program
// without it, exit status 0) and returns the list with absolute paths, so
// ranks started in another directory find them too.
func checkPreload(list string) (string, error) {
	var out []string
	for _, lib := range strings.Split(list, ":") {
		if lib == "" {
			continue
		}
		abs, err := checkPreloadOne(lib)
		if err != nil {
			return "", err
		}
		out = append(out, abs)
	}
	if len(out) == 0 {
		return "", fmt.Errorf("-preload %q: no library", list)
	}
	return strings.Join(out, ":"), nil
}

func checkPreloadOne(lib string) (string, error) {
	abs, err := filepath.Abs(lib)
	if err != nil {
		return "", fmt.Errorf("-preload %s: %v", lib, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", fmt.Errorf("-preload %s: %v", lib, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("-preload %s: %v", lib, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("-preload %s: not a regular file", lib)
	}
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != "\x7fELF" {
		return "", fmt.Errorf("-preload %s: not an ELF shared library", lib)
	}
	return abs, nil
}

// NewJobToken returns a random 12-hex-digit job token.
func NewJobToken() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// CheckMpirun finds Open MPI's mpirun (mpirun.openmpi or mpirun) and
// checks that it is Open MPI's. It returns mpirun's path.
func CheckMpirun() (string, error) {
	// Debian's own name first: it stays Open MPI's whichever MPI the
	// mpirun alternative points to.
	path, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		path, err = exec.LookPath("mpirun")
	}
	if err != nil {
		return "", fmt.Errorf("no mpirun in PATH: install Open MPI (make deps, or apt-get install openmpi-bin libopenmpi-dev)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if !bytes.Contains(out, []byte("Open MPI")) && !bytes.Contains(out, []byte("OpenRTE")) {
		first := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		if err != nil && first == "" {
			first = err.Error()
		}
		return path, fmt.Errorf("%s is not Open MPI's mpirun (its --version says %q); dpmlrun -mpi openmpi needs Open MPI 4.x (for MPICH: dpmlrun -mpi mpich, which uses mpiexec.hydra). Install openmpi-bin and put its mpirun first in PATH (update-alternatives --config mpirun)", path, first)
	}
	return path, nil
}

// CheckNamespaces checks that unshare and taskset exist and that this
// user may create a UTS namespace.
func CheckNamespaces() error {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return fmt.Errorf("no unshare in PATH: install util-linux (apt-get install util-linux)")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("no taskset in PATH: install util-linux (apt-get install util-linux)")
	}
	args := []string{"--uts", "true"}
	if os.Geteuid() != 0 {
		args = []string{"--user", "--map-root-user", "--uts", "true"}
	}
	if out, err := exec.Command(unshare, args...).CombinedOutput(); err != nil {
		hint := "run as root"
		if os.Geteuid() != 0 {
			hint = "run as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces)"
		}
		return fmt.Errorf("cannot create a UTS namespace (%s %s: %v: %s); fake nodes need it: %s",
			unshare, strings.Join(args, " "), err, strings.TrimSpace(string(out)), hint)
	}
	return nil
}

// countHosts counts the host lines of a hostfile.
func countHosts(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if fs := strings.Fields(line); len(fs) > 0 {
			// Open MPI: "host slots=N"; Hydra: "host:N".
			host, _, _ := strings.Cut(fs[0], ":")
			seen[host] = true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if len(seen) == 0 {
		return 0, fmt.Errorf("hostfile %s lists no hosts", path)
	}
	return len(seen), nil
}
