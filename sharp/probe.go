package sharp

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Probe is what Detect finds on this node.
type Probe struct {
	// Library is the libsharp_coll path tried; Loaded whether dlopen and
	// the entry points worked, LoadErr why not.
	Library string
	Loaded  bool
	LoadErr error
	// Emulated: the library is the tests' fake (internal/testkit/fakesharp), an
	// emulated switch on shared memory, not SHArP.
	Emulated bool
	// Devices are the RDMA devices of sysfs class infiniband.
	Devices []Device
	// Env lists the MPI library's and SHArP's own offload settings found
	// in the environment (NAME=value), sorted.
	Env []string
}

// Device is one RDMA device and its ports.
type Device struct {
	Name  string
	NUMA  int // -1: unknown
	Ports []Port
}

// Port is one port of a Device: SHArP needs link layer InfiniBand (not
// Ethernet, RoCE) and state ACTIVE.
type Port struct {
	Num       int
	LinkLayer string // "InfiniBand" or "Ethernet"
	State     string // e.g. "4: ACTIVE"
}

// Detect loads libsharp_coll from path (DefaultLibrary when empty), lists
// the RDMA devices under sysfs ("" = /sys) and the offload settings in the
// environment. It makes no MPI call.
func Detect(path, sysfs string) Probe {
	if path == "" {
		path = DefaultLibrary
	}
	p := Probe{Library: path}
	l, err := loadLib(path)
	p.Loaded, p.LoadErr = err == nil, err
	if l != nil {
		p.Emulated = l.emulated
	}
	p.Devices = Devices(sysfs)
	p.Env = Env(os.Environ())
	return p
}

// Devices lists /sys/class/infiniband (under sysfs, "" = /sys): name, NUMA
// node and each port's link layer and state. Empty when there is none.
func Devices(sysfs string) []Device {
	if sysfs == "" {
		sysfs = "/sys"
	}
	dir := filepath.Join(sysfs, "class", "infiniband")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Device
	for _, e := range ents {
		d := Device{Name: e.Name(), NUMA: -1}
		if n, err := strconv.Atoi(readTrim(filepath.Join(dir, e.Name(), "device", "numa_node"))); err == nil {
			d.NUMA = n
		}
		ports, _ := os.ReadDir(filepath.Join(dir, e.Name(), "ports"))
		for _, pe := range ports {
			num, err := strconv.Atoi(pe.Name())
			if err != nil {
				continue
			}
			pd := filepath.Join(dir, e.Name(), "ports", pe.Name())
			d.Ports = append(d.Ports, Port{Num: num, LinkLayer: readTrim(filepath.Join(pd, "link_layer")), State: readTrim(filepath.Join(pd, "state"))})
		}
		sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Usable reports whether d has an active InfiniBand port (what SHArP needs).
func (d Device) Usable() bool {
	for _, p := range d.Ports {
		if p.LinkLayer == "InfiniBand" && strings.Contains(p.State, "ACTIVE") {
			return true
		}
	}
	return false
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// envPrefixes are the variables through which MPI libraries and SHArP
// itself are told to offload collectives: Open MPI's coll/hcoll and
// coll/ucc components, HCOLL's own SHArP switch, UCC's sharp transport,
// libsharp_coll's settings, MVAPICH2's and Intel MPI's.
var envPrefixes = []string{
	"OMPI_MCA_coll_hcoll", "OMPI_MCA_coll_ucc", "OMPI_MCA_coll", "HCOLL_", "UCC_",
	"SHARP_COLL_", "MV2_ENABLE_SHARP", "MV2_SHARP", "I_MPI_COLL_", "NCCL_COLLNET",
}

// Env picks the offload settings out of environ (os.Environ form), sorted.
func Env(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range envPrefixes {
			if strings.HasPrefix(name, p) {
				out = append(out, kv)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// MPIOffloads interprets Env's settings: what they say about the MPI
// library offloading allreduce to SHArP itself (for the mpi backend). It
// names the settings only; whether the library honours them is for the
// user to measure.
func MPIOffloads(env []string) []string {
	val := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		val[k] = v
	}
	on := func(k string) bool {
		switch strings.ToLower(val[k]) {
		case "1", "y", "yes", "true", "on", "enable", "enabled":
			return true
		}
		return false
	}
	var out []string
	if on("OMPI_MCA_coll_hcoll_enable") {
		s := "Open MPI coll/hcoll enabled"
		if on("HCOLL_ENABLE_SHARP") || val["HCOLL_ENABLE_SHARP"] == "2" || val["HCOLL_ENABLE_SHARP"] == "3" {
			s += " with HCOLL_ENABLE_SHARP=" + val["HCOLL_ENABLE_SHARP"]
		}
		out = append(out, s)
	}
	if on("OMPI_MCA_coll_ucc_enable") {
		s := "Open MPI coll/ucc enabled"
		if t := val["UCC_CL_BASIC_TLS"]; strings.Contains(t, "sharp") {
			s += " with UCC_CL_BASIC_TLS=" + t
		}
		if on("UCC_TL_SHARP_ENABLE") || val["UCC_TL_SHARP_TUNE"] != "" {
			s += " (UCC tl/sharp settings present)"
		}
		out = append(out, s)
	}
	if on("MV2_ENABLE_SHARP") {
		out = append(out, "MVAPICH2 MV2_ENABLE_SHARP=1")
	}
	return out
}
