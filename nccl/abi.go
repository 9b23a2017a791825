package nccl

import (
	"fmt"
	"strings"
)

// Coll is a collective in NCCL's numbering (ncclFunc_t of NCCL 2.28.3's
// nccl_common.h): the value NCCL passes to the tuner's getCollInfo.
type Coll int

const (
	Broadcast Coll = iota
	Reduce
	AllGather
	ReduceScatter
	AllReduce
	// NumColls is the number of collectives NCCL asks its tuner about
	// (NCCL_NUM_FUNCTIONS; send/receive are never tuned).
	NumColls
)

var collNames = [...]string{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}

func (c Coll) String() string {
	if c >= 0 && c < NumColls {
		return collNames[c]
	}
	return fmt.Sprintf("Coll(%d)", int(c))
}

// ParseColl parses a name Coll.String prints, in any case.
func ParseColl(s string) (Coll, error) {
	for i, n := range collNames {
		if strings.EqualFold(s, n) {
			return Coll(i), nil
		}
	}
	return 0, fmt.Errorf("nccl: unknown collective %q (want one of %s)", s, strings.Join(collNames[:], ", "))
}

// Algorithms, in NCCL's numbering (the rows of the cost table NCCL 2.28.3
// passes to getCollInfo).
const (
	AlgoTree = iota
	AlgoRing
	AlgoCollNetDirect
	AlgoCollNetChain
	AlgoNVLS
	AlgoNVLSTree
	AlgoPAT
	NumAlgos
)

// Protocols, in NCCL's numbering (the columns of the cost table).
const (
	ProtoLL = iota
	ProtoLL128
	ProtoSimple
	NumProtos
)

var (
	algoNames  = [...]string{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
	protoNames = [...]string{"ll", "ll128", "simple"}
)

// AlgoName returns the table name of algorithm a ("ring"), or "" for -1
// (NCCL's choice).
func AlgoName(a int) string {
	if a >= 0 && a < NumAlgos {
		return algoNames[a]
	}
	return ""
}

// ProtoName returns the table name of protocol p ("simple"), or "" for -1.
func ProtoName(p int) string {
	if p >= 0 && p < NumProtos {
		return protoNames[p]
	}
	return ""
}

// ParseAlgo parses an algorithm name in any case; "" is -1 (NCCL's choice).
func ParseAlgo(s string) (int, error) { return parseName(s, algoNames[:], "algorithm") }

// ParseProto parses a protocol name in any case; "" is -1 (NCCL's choice).
func ParseProto(s string) (int, error) { return parseName(s, protoNames[:], "protocol") }

func parseName(s string, names []string, what string) (int, error) {
	if s == "" {
		return -1, nil
	}
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("nccl: unknown %s %q (want one of %s)", what, s, strings.Join(names, ", "))
}

// MaxChannels is the largest channel count the plugin answers: NCCL's
// MAXCHANNELS (channel masks are 64-bit words). NCCL itself caps a count
// above the communicator's channels to that number.
const MaxChannels = 64

// NumBuckets is the number of size buckets: bucket b holds the sizes
// [2^b, 2^(b+1)) (bucket 0 also 0 and 1 byte), the same floor(log2 n) as
// costmodel.MakeKey, so every size_t falls in one.
const NumBuckets = 64
