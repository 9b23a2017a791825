package learn

import (
	"fmt"
	"io"
	"math"

	"github.com/dpmlgo/dpml/costmodel"
)

// NewTunerFromDefault is NewTunerFromTable with the built-in table, read
// in place (costmodel.DefaultTable's copy costs a communicator's setup about a
// millisecond; the tuner only reads the table).
func NewTunerFromDefault(cfg Config) (*Tuner, error) {
	tb, err := costmodel.BuiltinTable()
	if err != nil {
		return nil, err
	}
	return NewTunerFromTable(cfg, tb)
}

// Table returns the tuner's state as a table with the tuner's provenance.
func (t *Tuner) Table() *Table {
	m := t.model
	tb := &Table{Schema: costmodel.SchemaVersion, Provenance: t.prov, Model: &m}
	for _, in := range t.Infos() {
		en := costmodel.EntryOf(in.Key, in.Arm)
		en.Samples, en.State = in.Samples, in.State.String()
		if !math.IsNaN(in.Prior) && !math.IsInf(in.Prior, 0) {
			en.Prior = in.Prior
		}
		if !math.IsNaN(in.Estimate) && !math.IsInf(in.Estimate, 0) {
			en.Estimate = in.Estimate
		}
		for _, ms := range in.Measured {
			en.Measured = append(en.Measured, costmodel.MeasuredArmOf(ms.Arm, ms.Estimate, ms.Samples))
		}
		tb.Entries = append(tb.Entries, en)
	}
	return tb
}

// Save writes the tuner's state as a JSON tuning table (see Table).
func (t *Tuner) Save(w io.Writer) error { return t.Table().Write(w) }

// Load reads a JSON tuning table and loads its entries (see LoadTable).
func (t *Tuner) Load(r io.Reader) (loaded int, err error) {
	tb, err := costmodel.ReadTable(r)
	if err != nil {
		return 0, err
	}
	return t.LoadTable(tb)
}

// LoadTable makes every entry of tb whose arm exists under this tuner's
// configuration the key's frozen choice (entries that set Coll belong to
// the NCCL tuner plugin and are skipped), with the entry's estimate as the
// frozen estimate (the model's prediction when the entry has none): a run
// with a table starts tuned, and a key re-explores only when its
// measurements drift from the estimate. It replaces any state the tuner
// had for those keys, and returns how many entries it loaded; entries
// whose arm is not feasible here are skipped. An entry with state "start"
// is the arm the key starts at. Entries of keys not called yet are applied
// at their first call (loading prices no key's arms); Info, Infos, Table
// and Fingerprint see them as applied. The table's model is not
// used (pass tb.ModelOr(costmodel.DefaultModel()) to NewTuner for that). Every rank
// must load the same table.
func (t *Tuner) LoadTable(tb *Table) (loaded int, err error) {
	if !costmodel.ReadableSchema(tb.Schema) {
		return 0, fmt.Errorf("costmodel: tuning table schema %d, this build reads 1 and %d", tb.Schema, costmodel.SchemaVersion)
	}
	if t.np > 0 {
		return 0, fmt.Errorf("costmodel: LoadTable with %d samples pending: commit first", t.np)
	}
	for i := range tb.Entries {
		en := &tb.Entries[i]
		if en.Coll != "" {
			continue // an NCCL tuner entry (package nccl), not a DPML plan
		}
		k, err := en.Key()
		if err != nil {
			return loaded, err
		}
		a, err := en.Arm()
		if err != nil {
			return loaded, err
		}
		pk := pack(k)
		idx := t.setFor(k).index(a)
		if idx < 0 {
			continue
		}
		st := start{idx: idx, verdict: en.State != "start", est: en.Estimate, samples: en.Samples}
		if t.keys[pk] == nil {
			// A key not called yet starts there at its first call
			// (entry): pricing every table size's arms here would
			// cost each communicator's setup about a millisecond.
			t.starts[pk] = st
			loaded++
			continue
		}
		delete(t.starts, pk)
		e := t.newEntry(k)
		t.startEntry(e, st)
		t.keys[pk] = e
		if t.lastK == pk {
			t.last = nil
		}
		loaded++
	}
	return loaded, nil
}

// NewTunerFromTable is NewTuner with tb's model (costmodel.DefaultModel if it has
// none) followed by LoadTable(tb).
func NewTunerFromTable(cfg Config, tb *Table) (*Tuner, error) {
	t, err := NewTuner(cfg, tb.ModelOr(costmodel.DefaultModel()))
	if err != nil {
		return nil, err
	}
	if _, err := t.LoadTable(tb); err != nil {
		return nil, err
	}
	return t, nil
}
