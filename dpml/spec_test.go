package dpml

import (
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

func TestParseOverride(t *testing.T) {
	for _, c := range []struct {
		spec  string
		want  Override
		canon string // Spec() of the result
	}{
		{"auto", Override{}, "auto"},
		{"AUTO", Override{}, "auto"},
		{" auto: ", Override{}, "auto"},
		{"native", Override{Variant: Native}, "native"},
		{"dpml", Override{Variant: DPML}, "dpml"},
		{"dpml:l=2", Override{Variant: DPML, Leaders: 2}, "dpml:l=2"},
		{"dpml:l=2,k=1", Override{Variant: DPML, Leaders: 2, Pipeline: 1}, "dpml:l=2,k=1"},
		{"pipelined:l=8,k=4", Override{Variant: Pipelined, Leaders: 8, Pipeline: 4}, "pipelined:l=8,k=4"},
		{"Pipelined: k=4 , l=8 ", Override{Variant: Pipelined, Leaders: 8, Pipeline: 4}, "pipelined:l=8,k=4"},
		{"pipelined:l=8,k=4,intra=cma", Override{Variant: Pipelined, Leaders: 8, Pipeline: 4, Intra: IntraCMA}, "pipelined:l=8,k=4,intra=cma"},
		{"dpml:intra=SHM,l=1", Override{Variant: DPML, Leaders: 1, Intra: IntraShm}, "dpml:l=1,intra=shm"},
		{"dpml:l=4,intra=auto", Override{Variant: DPML, Leaders: 4}, "dpml:l=4"},
		{"dpml:l=4,seg=64K", Override{Variant: DPML, Leaders: 4, SegmentBytes: 65536}, "dpml:l=4,seg=64K"},
		{"dpml:seg=1048576", Override{Variant: DPML, SegmentBytes: 1 << 20}, "dpml:seg=1M"},
		{"dpml:seg=3000", Override{Variant: DPML, SegmentBytes: 3000}, "dpml:seg=3000"},
		{"dpml:seg=2MiB", Override{Variant: DPML, SegmentBytes: 2 << 20}, "dpml:seg=2M"},
		{"auto:l=4", Override{Leaders: 4}, "auto:l=4"},
		{"auto:k=2,intra=cma", Override{Pipeline: 2, Intra: IntraCMA}, "auto:k=2,intra=cma"},
		{"dpml:intra=tree,r=8", Override{Variant: DPML, Intra: IntraTree, Radix: 8}, "dpml:intra=tree,r=8"},
		{"auto:r=2,intra=TREE", Override{Intra: IntraTree, Radix: 2}, "auto:intra=tree,r=2"},
		{"auto:inter=ring", Override{Inter: plan.InterRing}, "auto:inter=ring"},
		{"auto:inter=MPI", Override{Inter: plan.InterMPI}, "auto:inter=mpi"},
		{"pipelined:inter=ring,k=2,l=8", Override{Variant: Pipelined, Leaders: 8, Pipeline: 2, Inter: plan.InterRing}, "pipelined:l=8,k=2,inter=ring"},
		{"dpml:l=1,offload=sharp,inter=ring", Override{Variant: DPML, Leaders: 1, Offload: plan.OffloadSharp, Inter: plan.InterRing}, "dpml:l=1,offload=sharp,inter=ring"},
	} {
		got, err := ParseOverride(c.spec)
		if err != nil {
			t.Errorf("ParseOverride(%q): %v", c.spec, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseOverride(%q) = %+v, want %+v", c.spec, got, c.want)
		}
		if s := got.Spec(); s != c.canon {
			t.Errorf("ParseOverride(%q).Spec() = %q, want %q", c.spec, s, c.canon)
		}
		// The canonical form parses back to the same Override.
		if again, err := ParseOverride(c.canon); err != nil || again != c.want {
			t.Errorf("ParseOverride(%q) = %+v, %v; want %+v", c.canon, again, err, c.want)
		}
	}
}

func TestParseOverrideErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"", "no variant"},
		{":l=2", "no variant"},
		{"tree", `unknown variant "tree"`},
		{"dpml2", "unknown variant"},
		{"native:l=2", "native takes no settings"},
		{"dpml:l", "want key=value"},
		{"dpml:r=4", "needs intra=tree"},
		{"dpml:intra=tree,r=65", "r=65: want an integer from 1 to 64 (the tree's radix)"},
		{"dpml:intra=tree,r=x", "r=x: want an integer from 1 to 64"},
		// Each key's error names that key and only it.
		{"dpml:l=zz", `"dpml:l=zz": l=zz: want a positive integer (leaders per node)`},
		{"pipelined:k=zz", `k=zz: want a positive integer (the pipeline depth)`},
		{"dpml:l=", "want key=value"},
		{"dpml:=2", "want key=value"},
		{"dpml:l=2,", "want key=value"},
		{"dpml:l=0", "l=0: want a positive integer"},
		{"dpml:l=-1", "want a positive integer"},
		{"dpml:l=two", "want a positive integer"},
		{"pipelined:k=0", "k=0: want a positive integer"},
		{"dpml:l=2,l=4", "l given twice"},
		{"dpml:x=1", `unknown key "x"`},
		{"dpml:leaders=2", `unknown key "leaders"`},
		{"dpml:intra=tcp", "intra=tcp: want auto, shm, cma or tree"},
		{"dpml:seg=0", "seg=0: want a positive byte count"},
		{"dpml:seg=lots", "want a positive byte count"},
		{"dpml:k=4", "dpml runs k=1"},
		{"dpml:l=2;k=1", "want a positive integer"},
		{"dpml:inter=tree", "inter=tree: want mpi or ring"},
		{"dpml:inter=auto", "inter=auto: want mpi or ring"},
		{"dpml:inter=sharp", "the in-network offload is offload=sharp"},
		{"native:inter=ring", "native takes no settings"},
		{"dpml:inter=ring,inter=mpi", "inter given twice"},
	} {
		_, err := ParseOverride(c.spec)
		if err == nil {
			t.Errorf("ParseOverride(%q): no error, want one containing %q", c.spec, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "plan spec") {
			t.Errorf("ParseOverride(%q): error %q, want one containing %q", c.spec, err, c.want)
		}
	}
}

// Every Override ParseOverride can return is written back by Spec into a
// spec that parses to the same value.
func TestOverrideSpecRoundTrip(t *testing.T) {
	n := 0
	for _, v := range []Variant{Auto, DPML, Pipelined} {
		for _, l := range []int{0, 1, 3, 32} {
			for _, k := range []int{0, 1, 2, 8} {
				if v == DPML && k > 1 {
					continue
				}
				for i, in := range []Intra{IntraAuto, IntraShm, IntraCMA} {
					for j, seg := range []int{0, 1, 4096, 65536, 3 << 20, 1 << 30, 12345} {
						inter := []plan.Inter{plan.InterAuto, plan.InterMPI, plan.InterRing}[(i+j)%3]
						o := Override{Variant: v, Leaders: l, Pipeline: k, Intra: in, SegmentBytes: seg, Inter: inter}
						got, err := ParseOverride(o.Spec())
						if err != nil || got != o {
							t.Fatalf("%+v -> %q -> %+v, %v", o, o.Spec(), got, err)
						}
						n++
					}
				}
			}
		}
	}
	if o := (Override{Variant: Native}); o.Spec() != "native" {
		t.Errorf("native: %q", o.Spec())
	}
	t.Logf("%d overrides round-tripped", n)
}

func TestPlanSpec(t *testing.T) {
	for _, c := range []struct {
		p    Plan
		want string
	}{
		{Plan{}, "none"},
		{Plan{Shape: plan.Shape{Variant: Native, Leaders: 1, Pipeline: 1}}, "native"},
		{Plan{Shape: plan.Shape{Variant: DPML, Leaders: 2, Pipeline: 1}, ElemSize: 4, SegElems: 256}, "dpml:l=2,k=1,intra=shm,seg=1K"},
		{Plan{Shape: plan.Shape{Variant: Pipelined, Leaders: 8, Pipeline: 4, Intra: IntraCMA}, ElemSize: 8, SegElems: 1 << 17}, "pipelined:l=8,k=4,intra=cma,seg=1M"},
		{Plan{Shape: plan.Shape{Variant: DPML, Leaders: 1, Pipeline: 1, Intra: IntraTree, Radix: 8}, ElemSize: 8, SegElems: 1}, "dpml:l=1,k=1,intra=tree,r=8,seg=8"},
		{Plan{Shape: plan.Shape{Variant: DPML, Leaders: 1, Pipeline: 1}, ElemSize: 4, SegElems: 3}, "dpml:l=1,k=1,intra=shm,seg=12"},
		// The MPI library's step is the default, left out; the ring is named.
		{Plan{Shape: plan.Shape{Variant: DPML, Leaders: 2, Pipeline: 1, Inter: plan.InterMPI}, ElemSize: 4, SegElems: 256}, "dpml:l=2,k=1,intra=shm,seg=1K"},
		{Plan{Shape: plan.Shape{Variant: Pipelined, Leaders: 4, Pipeline: 2, Inter: plan.InterRing}, ElemSize: 8, SegElems: 1 << 17}, "pipelined:l=4,k=2,intra=shm,seg=1M,inter=ring"},
	} {
		if got := c.p.Spec(); got != c.want {
			t.Errorf("%+v: Spec() = %q, want %q", c.p, got, c.want)
		}
		if c.want == "none" {
			continue
		}
		// What ran can be forced again.
		if _, err := ParseOverride(c.want); err != nil {
			t.Errorf("%q does not parse: %v", c.want, err)
		}
	}
}
