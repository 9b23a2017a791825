package dpml

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
)

// The machine profile: a tuning table the engine finds by itself, kept per
// user in a cache directory (DPML_PROFILE_DIR, else $XDG_CACHE_HOME/dpml,
// else ~/.cache/dpml) under a name derived from what decides the plans'
// speed: the CPU model, online CPUs, sockets and NUMA nodes, the layout
// (nodes and ranks per node) and the MPI library. Without DPML_TUNING_FILE
// and with DPML_PROFILE=auto (the default) a communicator starts from the
// profile that matches (rank 0 reads it and broadcasts it, as it does a
// tuning file) and, at Close, saves what its learner measured into it
// (rank 0; costmodel.WriteTableFile: never through a link, never torn by
// two jobs at once, entries of other layouts kept). DPML_PROFILE=read
// loads but never writes; off ignores profiles. A profile whose recorded
// key is not this machine's (a renamed file, a hash collision) is ignored,
// as is a damaged one: a profile is a head start, never a reason to fail.

// profileKey describes this rank's machine and the communicator's layout:
// the profile's identity, written into its provenance.
func (c *Comm) profileKey() string {
	m := machineKey()
	return fmt.Sprintf("%s; %s; %d CPUs, %d sockets, %d NUMA nodes; %d nodes x %d..%d ranks; %s",
		runtime.GOARCH, m.model, m.cpus, m.sockets, m.numa, c.nodes, c.minPPN, c.ppn, m.mpi)
}

// machineKey is the machine's part of profileKey, the same for every
// communicator of the process, so it is read once: on the 2-core
// development machine the reading took 57 us (most of it /proc/cpuinfo),
// and a program that sets up communicators as it goes paid it in every
// setup.
var machineKey = sync.OnceValue(func() (m struct {
	model               string
	cpus, sockets, numa int
	mpi                 string
}) {
	m.model = "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	sockets, numa := map[int]bool{}, map[int]bool{}
	if t, err := leaders.LocalTopology(); err == nil {
		for _, cpu := range t.CPUs {
			sockets[cpu.Socket], numa[cpu.NUMA] = true, true
		}
	}
	m.cpus, m.sockets, m.numa = leaders.OnlineCPUs(), len(sockets), len(numa)
	m.mpi = strings.SplitN(mpi.LibraryVersion(), "\n", 2)[0]
	return m
})

// profileDir is the directory of the machine profiles ("" if none can be
// named: no DPML_PROFILE_DIR, XDG_CACHE_HOME or HOME).
func profileDir() string {
	if d, _ := config.Get(config.ProfileDir); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "dpml")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".cache", "dpml")
	}
	return ""
}

// profilePath is the file of the profile with key key in dir.
func profilePath(dir, key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return filepath.Join(dir, fmt.Sprintf("profile-%016x.json", h.Sum64()))
}

// loadProfile reads this machine's profile on rank 0 and broadcasts it
// (collective over c.world, taken by every rank when profiles are on):
// nil when there is none or it does not match. It sets c.profile (rank
// 0: the file Close saves to).
func (c *Comm) loadProfile() (*costmodel.Table, error) {
	var data []byte
	n := []int64{0}
	var key string
	if c.rank == 0 {
		key = c.profileKey()
		if dir := profileDir(); dir != "" {
			c.profile, c.profileKeyText = profilePath(dir, key), key
			if costmodel.CheckTableFile(c.profile) == nil {
				if d, err := readTuningFile(c.profile); err == nil && d != nil {
					data = d
				} else if err != nil && c.verbose > 0 {
					fmt.Fprintf(os.Stderr, "dpml: machine profile ignored: %v\n", err)
				}
			}
		}
		n[0] = int64(len(data))
	}
	if err := mpi.Bcast(c.world, n, 0); err != nil {
		return nil, fmt.Errorf("%w: broadcast machine profile: %w", ErrSetup, err)
	}
	if n[0] == 0 {
		return nil, nil
	}
	if c.rank != 0 {
		data = make([]byte, n[0])
	}
	if err := mpi.Bcast(c.world, data, 0); err != nil {
		return nil, fmt.Errorf("%w: broadcast machine profile: %w", ErrSetup, err)
	}
	// Every rank decides alike from the same bytes; only rank 0 knows
	// the key, so it rides in the table (provenance) and rank 0's
	// verdict is broadcast.
	tb, err := parseTuningTable(data)
	ok := []int64{0}
	if c.rank == 0 {
		switch {
		case err != nil:
			if c.verbose > 0 {
				fmt.Fprintf(os.Stderr, "dpml: machine profile %s ignored: %v\n", c.profile, err)
			}
		case tb.Provenance.Note != profileNote(key):
			if c.verbose > 0 {
				fmt.Fprintf(os.Stderr, "dpml: machine profile %s ignored: made for %q, this is %q\n", c.profile, tb.Provenance.Note, profileNote(key))
			}
		default:
			ok[0] = 1
		}
	}
	if err := mpi.Bcast(c.world, ok, 0); err != nil {
		return nil, fmt.Errorf("%w: broadcast machine profile: %w", ErrSetup, err)
	}
	if ok[0] == 0 || err != nil {
		return nil, nil
	}
	if c.verbose > 0 && c.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: machine profile %s: %d entries\n", c.profile, len(tb.Entries))
	}
	return tb, nil
}

// profileNote is the provenance note that names a profile's key.
func profileNote(key string) string { return "machine profile: " + key }

// saveProfile writes the learner's table into this machine's profile
// (rank 0, at Close, DPML_PROFILE=auto) when this communicator measured
// something; a failure is reported, never an error of Close.
func (c *Comm) saveProfile() {
	if c.tuner == nil || c.profile == "" || c.rank != 0 || c.profileMode != "auto" {
		return
	}
	if !c.tuner.Measured() {
		return // a communicator that made a few calls, or only settled ones, adds nothing
	}
	if err := os.MkdirAll(filepath.Dir(c.profile), 0o700); err != nil {
		fmt.Fprintf(os.Stderr, "dpml: machine profile not saved: %v\n", err)
		return
	}
	c.tuner.SetProvenance(c.provenance(profileNote(c.profileKeyText)))
	if err := costmodel.WriteTableFile(c.profile, c.tuner.Table()); err != nil {
		fmt.Fprintf(os.Stderr, "dpml: machine profile not saved: %v\n", err)
	}
}
