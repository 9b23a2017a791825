package nccl

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"
)

// The plugin's built-in answers, used when no DPML_NCCL_TABLE is given:
// one JSON file per machine kind (nccl/builtin_*.json), keyed by GPU
// count, GPU model and link type, each with its provenance. They are
// written by `dpmlnccl fit` from forced-channel sweeps; a machine no file
// names gets NCCL's default for every call.
//
//go:embed builtin_*.json
var builtinFiles embed.FS

// BuiltinSchema is the version of the built-in data format this package
// writes: 2 adds the channel floor (Builtin.Floor). ReadBuiltin also reads
// version 1 files (no floor).
const BuiltinSchema = 2

// Machine is what the built-in data is keyed by: the communicator's GPU
// count and nodes, the GPU model as the driver names it ("NVIDIA H200")
// and the link between the GPUs ("nvlink" or "pcie").
type Machine struct {
	GPUs  int    `json:"gpus"`
	Nodes int    `json:"nodes"`
	GPU   string `json:"gpu"`
	Link  string `json:"link"`
}

// normal returns m with the model's spaces collapsed and the link in
// lower case (models compare without case).
func (m Machine) normal() Machine {
	m.GPU = strings.Join(strings.Fields(m.GPU), " ")
	m.Link = strings.ToLower(strings.TrimSpace(m.Link))
	return m
}

func (m Machine) matches(o Machine) bool {
	a, b := m.normal(), o.normal()
	return a.GPUs == b.GPUs && a.Nodes == b.Nodes && a.GPU != "" && strings.EqualFold(a.GPU, b.GPU) && a.Link != "" && a.Link == b.Link
}

func (m Machine) String() string {
	m = m.normal()
	gpu, link := m.GPU, m.Link
	if gpu == "" {
		gpu = "unknown GPU"
	}
	if link == "" {
		link = "unknown link"
	}
	return fmt.Sprintf("%d x %s (%s, %d node)", m.GPUs, gpu, link, m.Nodes)
}

// BuiltinProvenance says where built-in data comes from.
type BuiltinProvenance struct {
	Machine  string `json:"machine"`  // the host the sweep ran on
	NCCL     string `json:"nccl"`     // NCCL version measured
	Date     string `json:"date"`     // when
	Measured string `json:"measured"` // what was measured, and what was not
	Source   string `json:"source"`   // the sweep files or how the data was entered
	Command  string `json:"command,omitempty"`
}

// BuiltinRange is one answer: Channels for collective Coll in the size
// buckets MinLog2..MaxLog2 (floor(log2 bytes), both included).
type BuiltinRange struct {
	Coll     string `json:"coll"`
	MinLog2  int    `json:"min_log2"`
	MaxLog2  int    `json:"max_log2"`
	Channels int    `json:"channels"`
	Evidence string `json:"evidence,omitempty"`
}

// BuiltinFloor is the channel floor of a machine: the channels a
// communicator is created with at least (ncclConfig_t minCTAs), so that
// the per-call answers up to that count take effect (NCCL caps a call's
// channels at its communicator's, which it fixes before it loads the
// tuner). FitFloor derives it from forced-channel sweeps; the library
// applies it when it is preloaded (doc.go, "The channel floor").
type BuiltinFloor struct {
	Channels int    `json:"channels"`
	Evidence string `json:"evidence,omitempty"`
}

// Builtin is one built-in data file.
type Builtin struct {
	Schema     int               `json:"schema"`
	Key        Machine           `json:"key"`
	Provenance BuiltinProvenance `json:"provenance"`
	// Floor is the machine's channel floor; nil: none (communicators keep
	// the channels NCCL gives them).
	Floor  *BuiltinFloor  `json:"floor,omitempty"`
	Ranges []BuiltinRange `json:"ranges"`
}

// Validate checks the key, the provenance and the ranges (in range,
// not overlapping within a collective).
func (b *Builtin) Validate() error {
	if b.Schema != 1 && b.Schema != BuiltinSchema {
		return fmt.Errorf("built-in data: schema %d, this build reads 1 and %d", b.Schema, BuiltinSchema)
	}
	k := b.Key.normal()
	if k.GPUs < 2 || k.Nodes < 1 || k.GPU == "" || (k.Link != "nvlink" && k.Link != "pcie") {
		return fmt.Errorf("built-in data: key %+v: want gpus >= 2, nodes >= 1, a GPU model and link nvlink or pcie", b.Key)
	}
	if b.Provenance.Machine == "" || b.Provenance.NCCL == "" || b.Provenance.Measured == "" {
		return fmt.Errorf("built-in data for %s: provenance needs machine, nccl and measured", k)
	}
	if f := b.Floor; f != nil {
		if b.Schema < 2 {
			return fmt.Errorf("built-in data for %s: a floor needs schema 2", k)
		}
		if f.Channels < 1 || f.Channels > MaxChannels {
			return fmt.Errorf("built-in data for %s: floor of %d channels: want 1..%d", k, f.Channels, MaxChannels)
		}
	}
	byColl := map[string][]BuiltinRange{}
	for _, r := range b.Ranges {
		c, err := ParseColl(r.Coll)
		if err != nil {
			return fmt.Errorf("built-in data for %s: %w", k, err)
		}
		if r.MinLog2 < 0 || r.MaxLog2 >= NumBuckets || r.MinLog2 > r.MaxLog2 || r.Channels < 1 || r.Channels > MaxChannels {
			return fmt.Errorf("built-in data for %s: range %s 2^%d..2^%d, %d channels: out of range", k, r.Coll, r.MinLog2, r.MaxLog2, r.Channels)
		}
		byColl[c.String()] = append(byColl[c.String()], r)
	}
	for c, rs := range byColl {
		sort.Slice(rs, func(i, j int) bool { return rs[i].MinLog2 < rs[j].MinLog2 })
		for i := 1; i < len(rs); i++ {
			if rs[i].MinLog2 <= rs[i-1].MaxLog2 {
				return fmt.Errorf("built-in data for %s: %s ranges 2^%d..2^%d and 2^%d..2^%d overlap", k, c, rs[i-1].MinLog2, rs[i-1].MaxLog2, rs[i].MinLog2, rs[i].MaxLog2)
			}
		}
	}
	return nil
}

// Write writes b as indented JSON.
func (b *Builtin) Write(w io.Writer) error {
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// ReadBuiltin reads and checks one built-in data file.
func ReadBuiltin(r io.Reader) (*Builtin, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var b Builtin
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("built-in data: %w", err)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return &b, nil
}

var builtins struct {
	once sync.Once
	all  []*Builtin
	err  error
}

// Builtins returns the embedded built-in data, checked; two files with
// the same key are an error.
func Builtins() ([]*Builtin, error) {
	builtins.once.Do(func() {
		names, err := builtinFiles.ReadDir(".")
		if err != nil {
			builtins.err = err
			return
		}
		for _, e := range names {
			raw, err := builtinFiles.ReadFile(e.Name())
			if err != nil {
				builtins.err = err
				return
			}
			b, err := ReadBuiltin(bytes.NewReader(raw))
			if err != nil {
				builtins.err = fmt.Errorf("%s: %w", path.Base(e.Name()), err)
				return
			}
			for _, o := range builtins.all {
				if o.Key.matches(b.Key) {
					builtins.err = fmt.Errorf("%s: a second file for %s", e.Name(), b.Key.normal())
					return
				}
			}
			builtins.all = append(builtins.all, b)
		}
	})
	return builtins.all, builtins.err
}

// LookupBuiltin returns the built-in data for machine m, if any.
func LookupBuiltin(m Machine) (*Builtin, bool, error) {
	all, err := Builtins()
	if err != nil {
		return nil, false, err
	}
	for _, b := range all {
		if b.Key.matches(m) {
			return b, true, nil
		}
	}
	return nil, false, nil
}

// fillBuiltin answers from b's ranges; every other call is NCCL's.
func (p *Policy) fillBuiltin(b *Builtin) {
	for _, r := range b.Ranges {
		c, err := ParseColl(r.Coll)
		if err != nil {
			continue // Validate refused it already
		}
		for l := r.MinLog2; l <= r.MaxLog2; l++ {
			p.choice[c][l] = Decision{Channels: r.Channels, Algo: -1, Proto: -1}
		}
	}
}
