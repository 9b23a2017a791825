package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// ssh options that take an argument (OpenSSH's "BbcDEeFIiJLlmOoPpQRSWw").
const sshOptsWithArg = "BbcDEeFIiJLlmOoPpQRSWw"

// ParseAgentArgs parses the words Open MPI's rsh launcher passes to its
// agent (everything after AgentArg): ssh-style options, then the host, then
// the remote command words. Like ssh, the command words are joined with
// single spaces into one shell command.
func ParseAgentArgs(args []string) (host, command string, err error) {
	i := 0
	for i < len(args) {
		w := args[i]
		if w == "--" {
			i++
			break
		}
		if len(w) < 2 || w[0] != '-' {
			break
		}
		// A cluster of flags ("-xT"); the first letter that takes an
		// argument ends the cluster, its argument being the rest of the
		// word ("-p22") or the next word ("-p 22").
		i++
		for k := 1; k < len(w); k++ {
			if strings.IndexByte(sshOptsWithArg, w[k]) >= 0 {
				if k == len(w)-1 {
					if i >= len(args) {
						return "", "", fmt.Errorf("option -%c needs an argument", w[k])
					}
					i++ // skip the separate argument
				}
				break
			}
		}
	}
	if i >= len(args) {
		return "", "", fmt.Errorf("no host name in %q", args)
	}
	host = args[i]
	if u, h, ok := strings.Cut(host, "@"); ok && u != "" {
		host = h
	}
	command = strings.TrimSpace(strings.Join(args[i+1:], " "))
	if host == "" {
		return "", "", fmt.Errorf("empty host name")
	}
	if command == "" {
		return "", "", fmt.Errorf("no command for host %s (interactive logins are not supported)", host)
	}
	return host, command, nil
}

// agentScript runs as sh -c SCRIPT host cpus command: it names the UTS
// namespace after the fake host and runs the command pinned to the host's
// CPUs.
const agentScript = `hostname "$0" 2>/dev/null || printf %s "$0" >/proc/sys/kernel/hostname || { echo "dpmlrun agent: cannot set hostname $0" >&2; exit 255; }
if [ -n "$1" ]; then exec taskset -c "$1" sh -c "$2"; fi
exec sh -c "$2"`

// AgentArgv is the command the agent execs for host: a new UTS namespace
// (plus a user namespace mapping the caller to root when not root) whose
// hostname is host, running command under taskset -c cpus (no pinning when
// cpus is empty).
func AgentArgv(unshare, host, cpus string, root bool, command string) []string {
	a := []string{unshare}
	if !root {
		a = append(a, "--user", "--map-root-user")
	}
	return append(a, "--uts", "sh", "-c", agentScript, host, cpus, command)
}

// AgentMain is dpmlrun in agent mode (args are the words after AgentArg).
// It never returns on success: it execs unshare.
func AgentMain(args []string) int {
	host, command, err := ParseAgentArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dpmlrun agent: %v\n", err)
		return 255
	}
	cpus := ""
	if m := os.Getenv(EnvCPUMap); m != "" {
		c, ok := LookupCPUMap(m, host)
		if !ok {
			fmt.Fprintf(os.Stderr, "dpmlrun agent: host %q is not one of this job's fake nodes (%s)\n", host, m)
			return 255
		}
		cpus = c
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		fmt.Fprintf(os.Stderr, "dpmlrun agent: %v (install util-linux)\n", err)
		return 255
	}
	argv := AgentArgv(unshare, host, cpus, os.Geteuid() == 0, command)
	err = syscall.Exec(unshare, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "dpmlrun agent: exec %s: %v\n", unshare, err)
	return 255
}
