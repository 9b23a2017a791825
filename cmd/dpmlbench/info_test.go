package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/fakesharp"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

func TestOffloadFlag(t *testing.T) {
	for in, want := range map[string]plan.Offload{"": plan.OffloadAuto, "-offload sharp": plan.OffloadSharp, "-offload HOST": plan.OffloadHost} {
		c, err := parseRunFlags(strings.Fields(in))
		if err != nil || c.offload != want {
			t.Errorf("%q: offload %v, %v; want %v", in, c.offload, err, want)
		}
	}
	if _, err := parseRunFlags([]string{"-offload", "on"}); !isUsage(err) {
		t.Errorf("-offload on: %v, want a usage error", err)
	}
	v := variantSpec{name: "dpml"}
	v.o.Leaders, v.o.Pipeline, v.o.Offload = 1, 1, plan.OffloadSharp
	if v.label() != "dpml l=1 k=1 offload=sharp" {
		t.Errorf("label %q", v.label())
	}
}

// TestInfoAndOffload: dpmlbench info on 2 fake nodes with the EMULATED
// libsharp and a sysfs holding one InfiniBand HCA reports the library as
// the emulation, the device, the leaders of each policy, the MPI
// library's offload settings and what the engine attached; then a sweep
// with -offload sharp runs its fixed plans offloaded (checked results) and
// its report says EMULATED.
func TestInfoAndOffload(t *testing.T) {
	lib := fakesharp.ForTest(t)
	t.Setenv(config.Offload, "libsharp")
	t.Setenv("HCOLL_ENABLE_SHARP", "3")
	t.Setenv("OMPI_MCA_coll_hcoll_enable", "1")
	sys := t.TempDir()
	if mpitest.InRank() {
		sys = os.Getenv("DPML_TEST_SYSFS")
	} else {
		for path, val := range map[string]string{
			"class/infiniband/mlx5_0/device/numa_node":   "0",
			"class/infiniband/mlx5_0/ports/1/link_layer": "InfiniBand",
			"class/infiniband/mlx5_0/ports/1/state":      "4: ACTIVE",
		} {
			p := filepath.Join(sys, path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(val+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("DPML_TEST_SYSFS", sys)
	}
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		var out bytes.Buffer
		if err := info(&out, world, sys); err != nil {
			t.Fatal(err)
		}
		if world.Rank() != 0 {
			if out.Len() != 0 {
				t.Errorf("rank %d wrote %q", world.Rank(), out.String())
			}
			return
		}
		s := out.String()
		for _, want := range []string{"node 0 (node1): 2 rank(s)", "node 1 (node2): 2 rank(s)", "node level (one per node): local rank",
			"socket level (one per socket):", "EMULATED switch of the tests", "RDMA device mlx5_0 (NUMA 0, usable for SHArP true)",
			"Open MPI coll/hcoll enabled with HCOLL_ENABLE_SHARP=3", "DPML_OFFLOAD=libsharp",
			"offload: libsharp (EMULATED switch), node level"} {
			if !strings.Contains(s, want) {
				t.Errorf("info lacks %q:\n%s", want, s)
			}
		}
	})
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		cfg, err := parseRunFlags(strings.Fields("-type int32 -sizes 8,1K,8K -check -variants native,dpml -leaders 1 -pipeline 1 -offload sharp -time 1ms -min-iters 2 -max-iters 4 -warmup 1 -out none -quiet"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runSweep(cfg, world, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rep.Meta.Offload, "EMULATED") {
			t.Errorf("report's offload: %q", rep.Meta.Offload)
		}
		want := map[int]string{8: "sharp", 1024: "sharp", 8192: "host"} // 8K: over DPML_OFFLOAD_BYTES
		for _, r := range rep.Results {
			if r.Variant != "dpml" {
				continue
			}
			if r.Check != "ok" || r.Offload != "sharp" || r.Plan == nil || r.Plan.Offload != want[r.Bytes] {
				t.Errorf("%d B %s: check %q, forced %q, ran %+v", r.Bytes, r.Label(), r.Check, r.Offload, r.Plan)
			}
		}
	})
	fakesharp.CheckNoSwitch(t, lib)
}
