package leaders

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Place is where one local rank runs: what the engine allgathers over the
// node communicator (as Encode words) to choose leaders. See Topology.Place
// for how the fields are derived. Unknown ids are -1.
type Place struct {
	CPUs    []int // affinity set, ascending
	Primary int   // lowest CPU of CPUs
	Core    int   // core id (within its socket) of Primary
	Socket  int   // socket of all of CPUs; -1 unknown or several
	NUMA    int   // NUMA node of all of CPUs; -1 unknown or several
	NearNIC bool  // an RDMA device is local to this place (see Topology.Place)
}

// Unknown is a Place without any information (an empty CPU set): all such
// places are equal, and Order treats them as one domain.
var Unknown = Place{Primary: -1, Core: -1, Socket: -1, NUMA: -1}

func (p Place) String() string {
	return fmt.Sprintf("cpu %d (core %d, socket %d, numa %d, %d cpus, nearNIC %v)",
		p.Primary, p.Core, p.Socket, p.NUMA, len(p.CPUs), p.NearNIC)
}

// Affinity returns the CPUs the calling thread may run on
// (sched_getaffinity(2)), ascending. The launcher's binding applies to the
// whole process, so any thread gives the rank's binding.
func Affinity() ([]int, error) {
	for n := 1024; ; n *= 2 {
		set := unix.NewCPUSet(n)
		err := unix.SchedGetaffinityDynamic(0, set)
		if errors.Is(err, unix.EINVAL) && n < 1<<20 {
			continue // the kernel's mask is larger than n bits
		}
		if err != nil {
			return nil, fmt.Errorf("leaders: sched_getaffinity: %w", err)
		}
		var cpus []int
		for c := range n {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
		return cpus, nil
	}
}

// Local describes the calling process: its affinity mapped through the
// node's topology (ReadTopology of DefaultSysfs). It fails only when the
// affinity cannot be read; a missing or unreadable sysfs yields a Place
// with unknown (-1) socket, NUMA node and core, which Order handles.
func Local() (Place, error) {
	t, err := localTopology()
	if err != nil {
		t = &Topology{}
	}
	return LocalIn(t)
}

// localTopology is the node's topology, read once per process: sysfs
// holds a file per CPU and attribute, and reading them took a
// communicator's setup milliseconds at 32 ranks per node.
var localTopology = sync.OnceValues(func() (*Topology, error) { return ReadTopology("") })

// Prefetch reads the node's topology now, so that the first Local does
// not: a program can call it in the background at start.
func Prefetch() { _, _ = localTopology() }

// LocalTopology is ReadTopology of DefaultSysfs, read once per process.
func LocalTopology() (*Topology, error) { return localTopology() }

// LocalIn is Local with a given topology.
func LocalIn(t *Topology) (Place, error) {
	cpus, err := Affinity()
	if err != nil {
		return Unknown, err
	}
	return t.Place(cpus), nil
}

// PlaceWords is the length of a Place's encoding.
const PlaceWords = 8 + maskWords

// EncodedCPUs is the number of CPU ids (0..EncodedCPUs-1) an encoding
// carries in its CPU set; larger ids are dropped from CPUs by Encode (the
// other fields, Primary included, are always exact).
const EncodedCPUs = maskWords * 64

const (
	maskWords  = 32
	placeMagic = 0x44504d4c504c4331 // "DPMLPLC1": format and version check
)

// Encode packs p into fixed-size words for an MPI allgather (PlaceWords
// int64 per rank). Layout: magic, Primary, Core, Socket, NUMA, NearNIC,
// len(CPUs), 0, then a bit mask of the CPUs below EncodedCPUs.
func (p Place) Encode() [PlaceWords]int64 {
	var w [PlaceWords]int64
	w[0] = placeMagic
	w[1], w[2], w[3], w[4] = int64(p.Primary), int64(p.Core), int64(p.Socket), int64(p.NUMA)
	if p.NearNIC {
		w[5] = 1
	}
	w[6] = int64(len(p.CPUs))
	for _, c := range p.CPUs {
		if c >= 0 && c < EncodedCPUs {
			w[8+c/64] |= int64(uint64(1) << (c % 64))
		}
	}
	return w
}

// DecodePlace unpacks Encode's words. It fails on words that are not an
// encoding (wrong magic, e.g. a zeroed buffer) or are inconsistent.
// Decode(Encode(p)) equals p when p.CPUs is ascending, distinct and below
// EncodedCPUs (as Topology.Place makes it) except that an empty CPUs
// decodes as nil.
func DecodePlace(w [PlaceWords]int64) (Place, error) {
	if w[0] != placeMagic {
		return Unknown, fmt.Errorf("leaders: not an encoded place (magic %#x)", uint64(w[0]))
	}
	p := Place{
		Primary: int(w[1]), Core: int(w[2]), Socket: int(w[3]), NUMA: int(w[4]),
		NearNIC: w[5] != 0,
	}
	n := 0
	for i, m := range w[8:] {
		for u := uint64(m); u != 0; u &= u - 1 {
			p.CPUs = append(p.CPUs, i*64+bits.TrailingZeros64(u))
			n++
		}
	}
	if w[5] != 0 && w[5] != 1 || w[6] < int64(n) || w[7] != 0 {
		return Unknown, errors.New("leaders: corrupt encoded place")
	}
	return p, nil
}

// DecodePlaces decodes the result of allgathering Encode words: ppn
// consecutive groups of PlaceWords.
func DecodePlaces(words []int64) ([]Place, error) {
	if len(words)%PlaceWords != 0 {
		return nil, fmt.Errorf("leaders: %d words is not a multiple of %d", len(words), PlaceWords)
	}
	places := make([]Place, 0, len(words)/PlaceWords)
	for c := range slices.Chunk(words, PlaceWords) {
		p, err := DecodePlace([PlaceWords]int64(c))
		if err != nil {
			return nil, fmt.Errorf("local rank %d: %w", len(places), err)
		}
		places = append(places, p)
	}
	return places, nil
}
