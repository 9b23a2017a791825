package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Flavor is the MPI ABI family a job is launched for: Open MPI's mpirun or
// MPICH's Hydra mpiexec (MPICH and its ABI relatives).
type Flavor string

// The flavors dpmlrun knows.
const (
	OpenMPI Flavor = "openmpi"
	MPICH   Flavor = "mpich"
)

// DefaultMPI is the flavor used when neither -mpi nor the program says
// which MPI it needs: the one dpmlrun was built for (`make build MPI=mpich`
// builds bin/mpich/dpmlrun with the tag mpich), so each build directory's
// dpmlrun launches its own ABI by default.
var DefaultMPI = string(BuildFlavor)

// ParseFlavor parses -mpi: "openmpi" or "mpich" ("" and "auto" mean: find
// out, see ResolveFlavor).
func ParseFlavor(s string) (Flavor, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return "", nil
	case "openmpi", "ompi", "open-mpi":
		return OpenMPI, nil
	case "mpich", "hydra":
		return MPICH, nil
	}
	return "", fmt.Errorf("-mpi %q: want openmpi, mpich or auto", s)
}

// abiOfLib maps a shared library name a program needs to the flavor whose
// launcher can start it. libmpi.so.12 is the MPICH ABI name (MPICH's
// compatibility link, Intel MPI, MVAPICH2, Cray MPICH); libmpi.so.40 is Open
// MPI 3 to 5.
func abiOfLib(lib string) Flavor {
	switch {
	case strings.HasPrefix(lib, "libmpi.so.40"), strings.HasPrefix(lib, "libmpi_mpifh.so.40"),
		strings.HasPrefix(lib, "libmpi_usempif08.so.40"):
		return OpenMPI
	case strings.HasPrefix(lib, "libmpich.so.12"), strings.HasPrefix(lib, "libmpi.so.12"),
		strings.HasPrefix(lib, "libmpichfort.so.12"), strings.HasPrefix(lib, "libmpifort.so.12"):
		return MPICH
	}
	return ""
}

// ELFFlavor reports which MPI ABI the ELF file at path links against
// (its DT_NEEDED entries; not their dependencies), with the library that
// says so. It returns "" for a file that is not ELF (a script), links no
// MPI, or cannot be read.
func ELFFlavor(path string) (Flavor, string) {
	f, err := elf.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return "", ""
	}
	for _, l := range libs {
		if fl := abiOfLib(l); fl != "" {
			return fl, l
		}
	}
	return "", ""
}

// ResolveFlavor decides which launcher runs prog. A program and a preload
// library that name an MPI ABI must agree with each other and with an
// explicit -mpi: an MPICH program started by Open MPI's mpirun (or the
// reverse) runs as N singletons, each rank 0 of 1, which no test notices.
// With no evidence, explicit wins, then DefaultMPI.
func ResolveFlavor(explicit Flavor, prog []string, preload string) (Flavor, error) {
	type evidence struct{ what, lib string }
	seen := map[Flavor]evidence{}
	var order []Flavor
	note := func(path, what string) {
		if fl, lib := ELFFlavor(path); fl != "" {
			if _, ok := seen[fl]; !ok {
				seen[fl] = evidence{what, lib}
				order = append(order, fl)
			}
		}
	}
	if len(prog) > 0 {
		if p, err := exec.LookPath(prog[0]); err == nil {
			note(p, prog[0])
		}
	}
	for _, lib := range strings.Split(preload, ":") {
		if lib != "" {
			note(lib, "-preload "+lib)
		}
	}
	if len(order) > 1 {
		a, b := seen[order[0]], seen[order[1]]
		return "", fmt.Errorf("%s needs %s (%s) but %s needs %s (%s): build both against the same MPI (make build MPI=%s puts the %s build in its own directory)",
			a.what, order[0], a.lib, b.what, order[1], b.lib, order[1], order[1])
	}
	if len(order) == 1 {
		fl, ev := order[0], seen[order[0]]
		if explicit != "" && explicit != fl {
			return "", fmt.Errorf("-mpi %s, but %s is linked against %s (%s): its ranks would start as unrelated singletons", explicit, ev.what, fl, ev.lib)
		}
		return fl, nil
	}
	if explicit != "" {
		return explicit, nil
	}
	fl, err := ParseFlavor(DefaultMPI)
	if err != nil || fl == "" {
		return OpenMPI, nil
	}
	return fl, nil
}

// HydraNames are the names MPICH's launcher goes by, searched in this order
// (Debian installs mpiexec.hydra and the alternatives mpiexec.mpich and
// mpirun.mpich; plain mpiexec is often Open MPI's).
var HydraNames = []string{"mpiexec.hydra", "mpiexec.mpich", "mpiexec", "mpirun.mpich", "mpirun"}

// CheckMpiexec finds MPICH's Hydra launcher in PATH (the first of
// HydraNames whose -version says HYDRA) and returns its path.
func CheckMpiexec() (string, error) {
	var tried []string
	for _, name := range HydraNames {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, _ := exec.CommandContext(ctx, path, "-version").CombinedOutput()
		cancel()
		if bytes.Contains(out, []byte("HYDRA")) {
			return path, nil
		}
		tried = append(tried, path)
	}
	msg := "no MPICH Hydra launcher (mpiexec.hydra) in PATH: install MPICH (make deps MPI=mpich, or apt-get install mpich libmpich-dev)"
	if len(tried) > 0 {
		msg += fmt.Sprintf("; %s is not Hydra", strings.Join(tried, ", "))
	}
	return "", errors.New(msg)
}

// HydraAgentScript is the launcher executable dpmlrun gives Hydra
// (-launcher ssh -launcher-exec FILE). Hydra execs that value as one file
// name (unlike Open MPI, which splits plm_rsh_agent at spaces), so dpmlrun
// writes this two-line script into the job's directory; it calls dpmlrun
// (or the test binary acting as dpmlrun) in agent mode with Hydra's
// ssh-style words ("-x node1 \"/usr/bin/hydra_pmi_proxy\" --control-port
// ..."), which ParseAgentArgs already reads.
func HydraAgentScript(exe string) string {
	return "#!/bin/sh\nexec " + quoteWord(exe) + " " + AgentArg + " \"$@\"\n"
}

// hydraUserOpts are the mpiexec options dpmlrun sets itself that a user
// may replace through the extra arguments (Hydra refuses some options given
// twice, and a second -bind-to is an error).
var hydraUserOpts = map[string]string{
	"-bind-to": "-bind-to", "-binding": "-bind-to",
	"-iface": "-iface", "-launcher": "-launcher", "-launcher-exec": "-launcher-exec",
}

// userHydra lists dpmlrun's default options the extra arguments replace.
func userHydra(extra []string) map[string]bool {
	m := map[string]bool{}
	for _, w := range extra {
		// Hydra takes its options with one dash or two.
		if opt, ok := hydraUserOpts["-"+strings.TrimLeft(w, "-")]; ok && strings.HasPrefix(w, "-") {
			m[opt] = true
		}
	}
	return m
}

func buildHydraEmulated(o Options, mpiexec string) (*Plan, error) {
	if len(o.PPN) == 0 {
		return nil, fmt.Errorf("no nodes")
	}
	if o.AgentExec == "" {
		return nil, fmt.Errorf("no launch agent")
	}
	f, err := layFakeNodes(o)
	if err != nil {
		return nil, err
	}
	hostArg, over, n := f.hostArg, f.over, f.ranks
	user := userHydra(o.Extra)
	a := []string{mpiexec}
	// Hydra starts one proxy per host through the "ssh" launcher, which is
	// the agent: it enters a UTS namespace named after the host, so
	// MPI_Get_processor_name and gethostname say node1, node2, ...
	// MPICH itself groups ranks into nodes by Hydra's process mapping (the
	// proxy a rank runs under), which -hosts sets: node1's slots first.
	if !user["-launcher"] {
		a = append(a, "-launcher", "ssh")
	}
	if !user["-launcher-exec"] {
		a = append(a, "-launcher-exec", o.AgentExec)
	}
	// The proxies call back to mpiexec; over loopback that works without
	// a resolvable host name.
	if !user["-iface"] {
		a = append(a, "-iface", "lo")
	}
	// The agent pins each proxy (and so its ranks) to its fake node's
	// cores with taskset; Hydra's own binding would bind every node to the
	// same first cores.
	if !user["-bind-to"] {
		a = append(a, "-bind-to", "none")
	}
	a = append(a, "-hosts", strings.Join(hostArg, ","), "-n", strconv.Itoa(n))
	a = appendHydraEnv(a, o, len(o.PPN), FormatPPN(o.PPN), over)
	a = append(a, o.Extra...)
	a = append(a, o.Prog...)
	return f.plan(a), nil
}

func buildHydraHostfile(o Options, mpiexec string) (*Plan, error) {
	a := []string{mpiexec, "-f", o.Hostfile}
	ppn, ranks, err := hostfileRanks(o)
	if err != nil {
		return nil, err
	}
	if ppn != "" {
		if ranks > 0 {
			a = append(a, "-n", strconv.Itoa(ranks))
		}
		a = append(a, "-ppn", ppn)
	}
	a = appendHydraEnv(a, o, o.Nodes, ppn, false)
	a = append(a, o.Extra...)
	a = append(a, o.Prog...)
	return &Plan{Argv: a, Ranks: ranks}, nil
}

// appendHydraEnv passes dpmlrun's variables to the ranks. Hydra propagates
// mpiexec's whole environment by default (-genvall), so ExportEnv needs no
// option; -genv sets a value for the ranks only (not for mpiexec or the
// proxies, which matters for LD_PRELOAD).
func appendHydraEnv(a []string, o Options, nodes int, ppn string, over bool) []string {
	if nodes > 0 {
		a = append(a, "-genv", EnvNodes, strconv.Itoa(nodes))
	}
	if ppn != "" {
		a = append(a, "-genv", EnvPPN, ppn)
	}
	if o.Job != "" {
		a = append(a, "-genv", EnvJob, o.Job)
	}
	var pre []string
	if over && o.YieldLib != "" {
		pre = append(pre, o.YieldLib)
	}
	if o.Preload != "" {
		pre = append(pre, o.Preload)
	}
	if len(pre) > 0 {
		a = append(a, "-genv", "LD_PRELOAD", strings.Join(pre, ":"))
	}
	return a
}

// yieldSource is the C source of the yield shim dpmlrun preloads into the
// ranks of an oversubscribed MPICH job (more ranks than cores, as every
// multi-rank run on a 2-core machine). MPICH 4.0's ch4 progress loop never
// yields the CPU (strace shows no sched_yield, even at
// MPI_THREAD_MULTIPLE), and has no setting like Open MPI's
// mpi_yield_when_idle: two ranks pinned to one core then hand over only
// when the scheduler preempts one, and an 8-byte MPI_Allreduce on 2 fake
// nodes x 2 ranks on 2 cores took 6-11 ms. MPICH's UCX netmod (Debian's
// build is ch4:ucx) calls ucp_worker_progress on every pass of that loop;
// the shim yields when a pass found nothing to do, as mpi_yield_when_idle
// does: the same call then took about 22 us. With other netmods (ch4:ofi,
// ch3) the shim is never called and changes nothing.
const yieldSource = `// dpmlrun's yield shim for oversubscribed MPICH jobs (see internal/tools/launch/hydra.go).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
typedef unsigned (*dpml_progress_fn)(void *);
unsigned ucp_worker_progress(void *worker) {
	static dpml_progress_fn real;
	dpml_progress_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
	if (f == 0) {
		f = (dpml_progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
		if (f == 0) return 0;
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	unsigned n = f(worker);
	if (n == 0) sched_yield();
	return n;
}
`

// YieldLib returns the path of the compiled yield shim (see yieldSource),
// building it with the C compiler ($CC, else cc) into dir on first use.
// The file name carries a hash of the source, so a changed shim is
// rebuilt and concurrent jobs share one file (written under a temporary
// name, then renamed).
func YieldLib(dir string) (string, error) {
	path := yieldPath(dir)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("yield shim: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("yield shim: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "yield.c")
	if err := os.WriteFile(src, []byte(yieldSource), 0o644); err != nil {
		return "", fmt.Errorf("yield shim: %w", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	out := filepath.Join(tmp, "yield.so")
	if b, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", out, src, "-ldl").CombinedOutput(); err != nil {
		return "", fmt.Errorf("yield shim: %s: %v: %s", cc, err, strings.TrimSpace(string(b)))
	}
	if err := os.Rename(out, path); err != nil {
		return "", fmt.Errorf("yield shim: %w", err)
	}
	return path, nil
}

// yieldPath is the shim's file name in dir.
func yieldPath(dir string) string {
	sum := sha256.Sum256([]byte(yieldSource))
	return filepath.Join(dir, "libdpmlrun-yield-"+hex.EncodeToString(sum[:6])+".so")
}

// yieldDir is where YieldLib keeps the shim: the user's cache directory,
// or the system temporary directory when there is none.
func yieldDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "dpmlrun")
	}
	return filepath.Join(os.TempDir(), "dpmlrun-cache-"+strconv.Itoa(os.Getuid()))
}

// TagOutputArgs are the launcher arguments that prefix each output line
// with its rank: Open MPI "[job,rank]<stdout>:", Hydra "[rank] ".
func TagOutputArgs(f Flavor) []string {
	if f == MPICH {
		return []string{"-prepend-rank"}
	}
	return []string{"--tag-output"}
}

// ExportArgs are the launcher arguments that pass the named variables of
// the launcher's environment to the ranks (none for Hydra, which passes
// its whole environment).
func ExportArgs(f Flavor, names ...string) []string {
	if f == MPICH {
		return nil
	}
	var a []string
	for _, n := range names {
		a = append(a, "-x", n)
	}
	return a
}

// Compilers returns the MPI C and Fortran compiler wrappers of flavor f:
// Debian's flavor-specific names (mpicc.openmpi, mpicc.mpich, ...) when
// installed, so the choice does not depend on which MPI the mpicc
// alternative points to, else plain mpicc and mpif90.
func Compilers(f Flavor) (cc, fc string) {
	suffix := ".openmpi"
	if f == MPICH {
		suffix = ".mpich"
	}
	pick := func(names ...string) string {
		for _, n := range names {
			if _, err := exec.LookPath(n); err == nil {
				return n
			}
		}
		return names[len(names)-1]
	}
	return pick("mpicc"+suffix, "mpicc"), pick("mpif90"+suffix, "mpifort"+suffix, "mpif90")
}

// MissingForTests says why multi-process tests of flavor f cannot run on
// this machine ("" when they can): f's C compiler wrapper, its launcher, or
// the UTS namespaces of the fake-node emulation is missing. Tests that
// build and launch MPI programs skip with it.
func MissingForTests(f Flavor) string {
	cc, _ := Compilers(f)
	if _, err := exec.LookPath(cc); err != nil {
		return "no " + cc + " (make deps)"
	}
	check := CheckMpirun
	if f == MPICH {
		check = CheckMpiexec
	}
	if _, err := check(); err != nil {
		return err.Error()
	}
	if err := CheckNamespaces(); err != nil {
		return err.Error()
	}
	return ""
}
