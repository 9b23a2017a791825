package dpml

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
)

// The tuner (package costmodel) picks the variant, l and k of every call
// that forces nothing. It is a deterministic state machine fed, every few
// calls, with the max over ranks of the calls' durations (one small
// allreduce per batch), so every rank takes the same decision on every call
// without a broadcast per call. DPML_TUNER=static turns it off (the built-in
// default policy then decides); DPML_TUNING_FILE names a table to start from
// and to save to at Close.

// elemClass and opClass map kinds and ops to the tuner's classes (filled
// from the kinds' and ops' own properties, not from their order).
var (
	elemClass [mpi.KindComplex128 + 1]costmodel.ElemClass
	opClass   [mpi.OpBxor + 1]costmodel.OpClass
)

func init() {
	for _, k := range mpi.Kinds() {
		elemClass[k] = elemClassOf(k)
	}
	for _, op := range mpi.Ops() {
		opClass[op] = costmodel.OpClassOf(op.String())
	}
}

// elemClassOf is the tuner's class of element kind k.
func elemClassOf(k mpi.Kind) costmodel.ElemClass {
	switch {
	case k.IsInteger():
		return costmodel.ElemInt
	case k == mpi.KindFloat32:
		return costmodel.ElemFloat32
	case k == mpi.KindFloat64:
		return costmodel.ElemFloat64
	case k.IsComplex():
		return costmodel.ElemComplex
	}
	return costmodel.ElemAny
}

// setupTuner builds the tuner (collective: rank 0 reads the tuning file and
// broadcasts it, so all ranks start from the same state).
func (d *Comm) setupTuner() error {
	mode, err := config.Get(config.Tuner)
	if err != nil {
		return err
	}
	cfg := costmodel.DefaultConfig()
	switch strings.ToLower(mode) {
	case "static":
		return nil
	case "auto":
		cfg.Mode = costmodel.ModeLearn
	case "model":
		cfg.Mode = costmodel.ModeModel
	default:
		return fmt.Errorf("dpml: %s=%q: want auto, model or static", config.Tuner, mode)
	}
	_, defSeg := d.defaultPlan(0)
	cfg.SegmentBytes = min(d.segBudget, defSeg)
	cfg.CMA = d.cma // arms with cross-memory attach where the kernel permits it
	if d.tuningFile, err = config.Get(config.TuningFile); err != nil {
		return err
	}
	tb := costmodel.DefaultTable()
	if d.tuningFile != "" {
		// -1: unreadable; 0: no file yet (start from the default, save at Close).
		var data []byte
		n := []int64{0}
		var rerr error
		if d.rank == 0 {
			data, rerr = os.ReadFile(d.tuningFile)
			switch {
			case errors.Is(rerr, fs.ErrNotExist):
				rerr, data = nil, nil
			case rerr != nil:
				n[0] = -1
			default:
				n[0] = int64(len(data))
			}
		}
		if err := mpi.Bcast(d.world, n, 0); err != nil {
			return fmt.Errorf("dpml: broadcast tuning table: %w", err)
		}
		if n[0] < 0 {
			if rerr != nil {
				return fmt.Errorf("dpml: read %s: %w", d.tuningFile, rerr)
			}
			return fmt.Errorf("dpml: rank 0 could not read %s", d.tuningFile)
		}
		if n[0] > 0 {
			if d.rank != 0 {
				data = make([]byte, n[0])
			}
			if err := mpi.Bcast(d.world, data, 0); err != nil {
				return fmt.Errorf("dpml: broadcast tuning table: %w", err)
			}
			if tb, err = costmodel.ReadTable(bytes.NewReader(data)); err != nil {
				return fmt.Errorf("dpml: %s: %w", d.tuningFile, err)
			}
		}
	}
	if d.tuner, err = costmodel.NewTunerFromTable(cfg, tb); err != nil {
		return fmt.Errorf("dpml: tuner: %w", err)
	}
	fp := []uint64{d.tuner.Fingerprint(), d.tuner.Fingerprint()}
	if err := mpi.AllreduceInPlace(d.world, fp[:1], mpi.OpMax); err != nil {
		return err
	}
	if err := mpi.AllreduceInPlace(d.world, fp[1:], mpi.OpMin); err != nil {
		return err
	}
	if fp[0] != fp[1] {
		return errors.New("dpml: the tuner's starting state differs between ranks")
	}
	return nil
}

// tuned reports whether a call with override o is the tuner's to decide.
func (c *Comm) tuned(o Override, count, es int) bool {
	// Forcing any part of the plan (the intra-node path included: it is
	// one of the tuner's arms) takes the call out of the tuner's hands.
	// Messages small enough for the reduction tree take it: the tuner's
	// arms do not include it yet, and its partitioned plans lose there.
	return c.tuner != nil && count > 0 && c.nodes != c.size && count*es > c.treeBytes &&
		o == (Override{}) && c.fixed == (Override{}) && c.env == (Override{})
}

// tunerKey is the tuning key of a call.
func (c *Comm) tunerKey(kind mpi.Kind, op mpi.Op, count int) costmodel.Key {
	return costmodel.MakeKey(elemClass[kind], opClass[op], count*kind.Size(),
		costmodel.Layout{Nodes: c.nodes, PPN: c.minPPN})
}

// observe feeds one call's duration to the tuner; every batch it exchanges
// the batch's max over ranks (collective, at the same call on every rank).
func (c *Comm) observe(key costmodel.Key, arm costmodel.Arm, d time.Duration) error {
	if !c.tuner.Record(key, arm, d.Seconds()) {
		return nil
	}
	buf := c.tuner.Pending()
	if err := mpi.AllreduceInPlace(c.world, buf, mpi.OpMax); err != nil {
		return fmt.Errorf("dpml: tuner exchange: %w", err)
	}
	return c.tuner.Commit(buf)
}

// saveTuning writes the tuning table (rank 0, at Close) atomically.
func (c *Comm) saveTuning() error {
	if c.tuner == nil || c.tuningFile == "" || c.rank != 0 {
		return nil
	}
	host, _ := os.Hostname()
	c.tuner.SetProvenance(costmodel.Provenance{
		Host: host, Cores: leaders.OnlineCPUs(), Layout: fmt.Sprintf("%dx%d", c.nodes, c.minPPN),
		MPI: strings.SplitN(mpi.LibraryVersion(), "\n", 2)[0], Date: time.Now().UTC().Format(time.RFC3339),
		Command: strings.Join(os.Args, " "),
	})
	tmp, err := os.CreateTemp(filepath.Dir(c.tuningFile), ".dpml-tuning-*")
	if err != nil {
		return fmt.Errorf("dpml: save tuning table: %w", err)
	}
	if err := c.tuner.Save(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("dpml: save tuning table: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), c.tuningFile)
}
