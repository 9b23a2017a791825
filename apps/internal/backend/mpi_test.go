package backend

import (
	"testing"

	"github.com/dpmlgo/dpml/apps/internal/report"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

func TestMain(m *testing.M) { mpitest.Main(m) }

// Every backend sums alike, counts its calls, and Fill aggregates over the
// ranks; GatherLayout sees the fake nodes.
func TestReducerFill(t *testing.T) {
	mpitest.RunLayout(t, mpitest.Layout{PPN: []int{3, 2}}, func(t *testing.T, w *mpi.Comm) {
		lay, err := GatherLayout(w)
		if err != nil {
			t.Fatal(err)
		}
		if lay.Nodes != 2 || lay.PPN != 3 || lay.PPNMin != 2 || lay.String() != "3,2" || len(lay.Hosts) != 2 {
			t.Fatalf("layout %+v (%s)", lay, lay)
		}
		for _, name := range []string{"native", "dpml", "dpml-l2", "dpml-l2-k2"} {
			spec, _ := Parse(name)
			r, err := New(w, spec)
			if err != nil {
				t.Fatal(err)
			}
			c := r.Counter("x")
			v, err := r.Sum(c, float64(w.Rank()+1))
			if err != nil || v != 15 {
				t.Fatalf("%s: sum %v, %v", name, v, err)
			}
			buf := make([]int64, 1000)
			for i := range buf {
				buf[i] = int64(i * (w.Rank() + 1))
			}
			if err := r.Int64("y", buf, mpi.OpSum); err != nil || buf[999] != 999*15 {
				t.Fatalf("%s: int64 sum %v, %v", name, buf[999], err)
			}
			if c.Calls != 1 || r.Counter("y").Elems != 1000 || r.Total().Calls != 2 || r.Total().Bytes != 8008 {
				t.Fatalf("%s: stats %+v", name, r.Stats())
			}
			var res report.Result
			if err := r.Fill(&res, lay, float64(w.Rank()), []Phase{{"p", 2}}, []int{1, 4096}, 8); err != nil {
				t.Fatal(err)
			}
			if res.Backend != name || res.Procs != 5 || res.Layout != "3,2" || res.TotalSec != 4 || res.Phases["p"] != 2 ||
				len(res.Allreduce) != 2 || res.Allreduce[1].MaxCount != 1000 || len(res.Plans) != 2 {
				t.Fatalf("%s: result %+v", name, res)
			}
			if spec.DPML && (res.Plans[0].Variant == "native" || res.Meta.MaxLeaders != 2) {
				t.Errorf("%s: plans %+v, max leaders %d", name, res.Plans, res.Meta.MaxLeaders)
			}
			if spec.Leaders == 2 && res.Plans[1].Leaders != 2 {
				t.Errorf("%s: plan %+v", name, res.Plans[1])
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
