package backend

import (
	"flag"
	"fmt"
	"os"

	"github.com/dpmlgo/dpml/mpi"
)

// Flags are the backend flags both apps take.
type Flags struct {
	Backend  string
	Leaders  int
	Pipeline int
}

// AddFlags registers -backend, -leaders and -pipeline on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Backend, "backend", "native", "allreduce backend: native (MPI_Allreduce), dpml (plan chosen by the engine), dpml-l<L> (L leaders per node), dpml-l<L>-k<K> (and pipeline depth K)")
	fs.IntVar(&f.Leaders, "leaders", 0, "with -backend dpml: fix the leaders per node (same as dpml-l<L>)")
	fs.IntVar(&f.Pipeline, "pipeline", 0, "with -backend dpml: fix the pipeline depth (same as dpml-...-k<K>)")
	return f
}

// Spec resolves the flags.
func (f *Flags) Spec() (Spec, error) {
	s, err := Parse(f.Backend)
	if err != nil {
		return s, err
	}
	if f.Leaders < 0 || f.Pipeline < 0 {
		return s, fmt.Errorf("-leaders %d, -pipeline %d: want >= 0", f.Leaders, f.Pipeline)
	}
	if (f.Leaders > 0 || f.Pipeline > 0) && !s.DPML {
		return s, fmt.Errorf("-leaders and -pipeline need a dpml backend, not %s", s)
	}
	if f.Leaders > 0 {
		s.Leaders = f.Leaders
	}
	if f.Pipeline > 0 {
		s.Pipeline = f.Pipeline
	}
	return s, nil
}

// Fatal prints err (prefixed by the program and rank) and aborts the MPI
// job, so no rank is left waiting in a collective.
func Fatal(prog string, w *mpi.Comm, err error) {
	rank := -1
	if w != nil {
		rank = w.Rank()
	}
	fmt.Fprintf(os.Stderr, "%s: rank %d: %v\n", prog, rank, err)
	if w != nil && w.Size() > 1 {
		_ = mpi.Abort(w, 1)
	}
	os.Exit(1)
}
