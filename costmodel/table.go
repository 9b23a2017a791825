package costmodel

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"

	"github.com/dpmlgo/dpml/plan"
)

// SchemaVersion is the tuning-table format this package writes. ReadTable
// accepts it and version 1 (written before the reduction tree was an arm:
// no intra, radix or tree parameters; its CMA flags are read as before).
const SchemaVersion = 2

// ReadableSchema reports whether ReadTable reads schema version v.
func ReadableSchema(v int) bool { return v == 1 || v == SchemaVersion }

// Provenance says where a table's numbers come from.
type Provenance struct {
	Host    string `json:"host"`
	Cores   int    `json:"cores"`
	Layout  string `json:"layout"` // e.g. "4x8" (nodes x ppn)
	MPI     string `json:"mpi"`    // MPI_Get_library_version, first line
	Date    string `json:"date"`   // RFC 3339
	Command string `json:"command"`
	Note    string `json:"note,omitempty"`
}

// Entry is one key's tuned choice.
type Entry struct {
	Elem      string  `json:"elem"`       // ElemClass name
	Op        string  `json:"op"`         // OpClass name
	Log2Bytes int     `json:"log2_bytes"` // size bucket
	Nodes     int     `json:"nodes"`
	PPN       int     `json:"ppn"`
	Variant   string  `json:"variant"`
	Leaders   int     `json:"leaders"`
	Pipeline  int     `json:"pipeline"`
	CMA       bool    `json:"cma,omitempty"`     // intra-node data by cross-memory attach
	Intra     string  `json:"intra,omitempty"`   // "tree" for the reduction tree (schema 2); empty: CMA says
	Radix     int     `json:"radix,omitempty"`   // the tree's radix
	Offload   string  `json:"offload,omitempty"` // "sharp": the inter-node step in-network (schema 2)
	Inter     string  `json:"inter,omitempty"`   // "ring": the leaders' step by the engine's ring (schema 2); empty: the MPI library's
	Estimate  float64 `json:"estimate_s"`        // measured seconds of the arm (0: unknown)
	Prior     float64 `json:"prior_s,omitempty"` // model's seconds
	Samples   uint64  `json:"samples"`
	State     string  `json:"state"` // "frozen" or "exploring" (loaded frozen), or "start" (explore from this arm)
	// Coll, Algo and Proto belong to tables of the NCCL tuner plugin
	// (package nccl): the collective ("allreduce", ...), and optionally
	// NCCL's algorithm and protocol ("ring", "simple"); there Leaders is
	// the channel count and Variant "native" NCCL's own choice. A DPML
	// table leaves them empty, and Tuner.LoadTable skips entries that set
	// Coll: they describe another library's calls.
	Coll  string `json:"coll,omitempty"`
	Algo  string `json:"algo,omitempty"`
	Proto string `json:"proto,omitempty"`
	// Measured lists the arms measured in the last episode (informative;
	// Load ignores it).
	Measured []MeasuredArm `json:"measured,omitempty"`
}

// EntryOf returns the entry of arm a for key k, without measurements:
// the table format's spelling of the key and the arm.
func EntryOf(k Key, a Arm) Entry {
	return Entry{
		Elem: k.Elem.String(), Op: k.Op.String(), Log2Bytes: int(k.SizeLog2), Nodes: int(k.Nodes), PPN: int(k.PPN),
		Variant: a.Variant.String(), Leaders: a.Leaders, Pipeline: a.Pipeline, CMA: a.Intra == plan.IntraCMA,
		Intra: intraName(a), Radix: a.Radix, Offload: offloadName(a), Inter: interName(a),
	}
}

// MeasuredArmOf returns arm a's saved estimate.
func MeasuredArmOf(a Arm, estimate float64, samples int) MeasuredArm {
	return MeasuredArm{Variant: a.Variant.String(), Leaders: a.Leaders, Pipeline: a.Pipeline,
		CMA: a.Intra == plan.IntraCMA, Intra: intraName(a), Radix: a.Radix, Offload: offloadName(a),
		Inter: interName(a), Estimate: estimate, Samples: samples}
}

// MeasuredArm is an arm's estimate in a saved entry.
type MeasuredArm struct {
	Variant  string  `json:"variant"`
	Leaders  int     `json:"leaders"`
	Pipeline int     `json:"pipeline"`
	CMA      bool    `json:"cma,omitempty"`
	Intra    string  `json:"intra,omitempty"`
	Radix    int     `json:"radix,omitempty"`
	Offload  string  `json:"offload,omitempty"`
	Inter    string  `json:"inter,omitempty"`
	Estimate float64 `json:"estimate_s"`
	Samples  int     `json:"samples"`
	Algo     string  `json:"algo,omitempty"`  // NCCL tables only (see Entry.Coll)
	Proto    string  `json:"proto,omitempty"` // NCCL tables only
}

// Table is the persisted form of a tuner: versioned, with provenance, the
// model its priors came from, and one entry per key.
type Table struct {
	Schema     int        `json:"schema"`
	Provenance Provenance `json:"provenance"`
	Model      *Model     `json:"model,omitempty"`
	Entries    []Entry    `json:"entries"`
}

// Key returns the entry's key.
func (en *Entry) Key() (Key, error) {
	e, err := ParseElemClass(en.Elem)
	if err != nil {
		return Key{}, err
	}
	o, err := ParseOpClass(en.Op)
	if err != nil {
		return Key{}, err
	}
	if en.Log2Bytes < 0 || en.Log2Bytes > 62 || en.Nodes < 1 || en.PPN < 1 || en.Nodes > math.MaxUint16 || en.PPN > math.MaxUint16 {
		return Key{}, fmt.Errorf("costmodel: entry %s/%s 2^%d %dx%d out of range", en.Elem, en.Op, en.Log2Bytes, en.Nodes, en.PPN)
	}
	return Key{Elem: e, Op: o, SizeLog2: uint8(en.Log2Bytes), Nodes: uint16(en.Nodes), PPN: uint16(en.PPN)}, nil
}

// Arm returns the entry's arm.
func (en *Entry) Arm() (Arm, error) {
	v, err := plan.ParseVariant(en.Variant)
	if err != nil || v == plan.Auto {
		return Arm{}, fmt.Errorf("costmodel: entry variant %q: want dpml, pipelined or native", en.Variant)
	}
	a, err := armOf(v, en.Leaders, en.Pipeline, en.CMA, en.Intra, en.Radix)
	if err != nil {
		return a, err
	}
	switch en.Offload {
	case "":
	case "sharp":
		if v == plan.Native {
			return Arm{}, fmt.Errorf("costmodel: entry native with offload %q", en.Offload)
		}
		a.Offload = plan.OffloadSharp
	default:
		return Arm{}, fmt.Errorf("costmodel: entry offload %q: want \"sharp\" or none", en.Offload)
	}
	switch en.Inter {
	case "":
	case "ring":
		if v == plan.Native {
			return Arm{}, fmt.Errorf("costmodel: entry native with inter %q", en.Inter)
		}
		a.Inter = plan.InterRing
	default:
		return Arm{}, fmt.Errorf("costmodel: entry inter %q: want \"ring\" or none", en.Inter)
	}
	return a, nil
}

// interName is an arm's Entry.Inter: the host's inter-node algorithm when
// it is not the default.
func interName(a Arm) string {
	if a.Inter == plan.InterRing {
		return "ring"
	}
	return ""
}

// offloadName is an arm's Entry.Offload.
func offloadName(a Arm) string {
	if a.Offload == plan.OffloadSharp {
		return "sharp"
	}
	return ""
}

// armOf is the arm a table names: the tree when intra says so, else
// copies unless cma (Native has no transport).
func armOf(v plan.Variant, l, k int, cma bool, intra string, radix int) (Arm, error) {
	a := Arm{Variant: v, Leaders: l, Pipeline: k, Overlap: v.Overlaps()}
	switch {
	case v == plan.Native:
	case intra == "tree":
		if v != plan.DPML || l < 1 || l > plan.MaxTrees || k > 1 || radix < 0 || radix > MaxTreeRadix {
			return Arm{}, fmt.Errorf("costmodel: tree entry %s l=%d k=%d r=%d: want dpml, l=1..%d, k=1, radix 0..%d", v, l, k, radix, plan.MaxTrees, MaxTreeRadix)
		}
		a.Intra, a.Radix = plan.IntraTree, radix
		if a.Radix == 0 {
			a.Radix = DefaultTreeRadix
		}
	case intra != "":
		return Arm{}, fmt.Errorf("costmodel: entry intra %q: want \"tree\" or none", intra)
	case cma:
		a.Intra = plan.IntraCMA
	default:
		a.Intra = plan.IntraShm
	}
	return a, nil
}

// intraName is an arm's Entry.Intra.
func intraName(a Arm) string {
	if a.Intra == plan.IntraTree {
		return "tree"
	}
	return ""
}

// ReadTable reads a JSON tuning table and checks its schema version.
func ReadTable(r io.Reader) (*Table, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var tb Table
	if err := dec.Decode(&tb); err != nil {
		return nil, fmt.Errorf("costmodel: reading tuning table: %w", err)
	}
	if !ReadableSchema(tb.Schema) {
		return nil, fmt.Errorf("costmodel: tuning table schema %d, this build reads 1 and %d", tb.Schema, SchemaVersion)
	}
	if tb.Schema == 1 {
		for i := range tb.Entries {
			if tb.Entries[i].Intra != "" || tb.Entries[i].Radix != 0 || tb.Entries[i].Offload != "" || tb.Entries[i].Inter != "" {
				return nil, fmt.Errorf("costmodel: schema 1 table with a tree, offload or inter entry (intra, radix, offload and inter are schema 2)")
			}
		}
	}
	if tb.Model != nil {
		if err := tb.Model.Validate(); err != nil {
			return nil, err
		}
	}
	for i := range tb.Entries {
		if _, err := tb.Entries[i].Key(); err != nil {
			return nil, err
		}
		if _, err := tb.Entries[i].Arm(); err != nil {
			return nil, err
		}
	}
	return &tb, nil
}

// Write writes the table as indented JSON, entries sorted by key.
func (tb *Table) Write(w io.Writer) error {
	out := *tb
	out.Schema = SchemaVersion
	out.Entries = append([]Entry(nil), tb.Entries...)
	sort.SliceStable(out.Entries, func(i, j int) bool {
		a, b := &out.Entries[i], &out.Entries[j]
		ka, _ := a.Key()
		kb, _ := b.Key()
		return packOrder(ka) < packOrder(kb)
	})
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// packOrder sorts keys by layout, then element, op and size.
func packOrder(k Key) uint64 {
	return uint64(k.Nodes)<<48 | uint64(k.PPN)<<32 | uint64(k.Elem)<<24 | uint64(k.Op)<<16 | uint64(k.SizeLog2)
}

// ModelOr returns the table's model, or def when it has none.
func (tb *Table) ModelOr(def Model) Model {
	if tb != nil && tb.Model != nil {
		return *tb.Model
	}
	return def
}

//go:embed default_table.json
var defaultTableJSON []byte

var defaultTable = sync.OnceValues(func() (*Table, error) {
	return ReadTable(bytes.NewReader(defaultTableJSON))
})

// DefaultTable returns the built-in table (default_table.json, embedded):
// what the engine starts from when no DPML_TUNING_FILE exists. It is a
// placeholder until regenerated from device runs. Each call returns a
// fresh copy.
func DefaultTable() *Table {
	tb, err := defaultTable()
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	var c Table
	b, _ := json.Marshal(tb)
	_ = json.Unmarshal(b, &c)
	return &c
}

// Prefetch parses the built-in table now, so that the first tuner built
// later does not: a program can call it in the background at start.
func Prefetch() { _, _ = defaultTable() }

// BuiltinTable returns the built-in table parsed once per process, shared:
// callers must not modify it (DefaultTable returns a copy to modify).
func BuiltinTable() (*Table, error) { return defaultTable() }
