package sharp

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/mpi"
)

// allKinds and allOps are the masks of everything, for tests.
func allKinds() uint64 { return 1<<uint(len(mpi.Kinds())) - 1 }
func allOps() uint64   { return 1<<uint(len(mpi.Ops())) - 1 }

func TestCapsSupports(t *testing.T) {
	c := Caps{Kinds: kindBits(mpi.KindInt32, mpi.KindFloat64), Ops: opBits(mpi.OpSum, mpi.OpBand)}
	for _, tc := range []struct {
		k  mpi.Kind
		op mpi.Op
		ok bool
	}{
		{mpi.KindInt32, mpi.OpSum, true},
		{mpi.KindFloat64, mpi.OpSum, true},
		{mpi.KindInt32, mpi.OpBand, true},
		{mpi.KindFloat64, mpi.OpBand, false}, // not an MPI combination
		{mpi.KindInt64, mpi.OpSum, false},    // type not offered
		{mpi.KindInt32, mpi.OpMax, false},    // op not offered
		{mpi.Kind(-1), mpi.OpSum, false},
		{mpi.KindInt32, mpi.Op(99), false},
	} {
		err := c.Supports(tc.k, tc.op)
		if (err == nil) != tc.ok {
			t.Errorf("Supports(%v, %v) = %v, want ok %v", tc.k, tc.op, err, tc.ok)
		}
		if err != nil && !Fallback(err) {
			t.Errorf("Supports(%v, %v) = %v: not a fallback error", tc.k, tc.op, err)
		}
	}
}

// TestCapsAgreement: the element-wise minimum of Words over members is
// the intersection of their capabilities, the smallest payload (no limit
// counting as the largest), the fewest outstanding operations, and fails
// when any member failed. The oracle is written out by hand.
func TestCapsAgreement(t *testing.T) {
	a := Caps{Kinds: kindBits(mpi.KindInt32, mpi.KindInt64, mpi.KindFloat32), Ops: opBits(mpi.OpSum, mpi.OpMax), MaxPayload: 1024, MaxOutstanding: 8}
	b := Caps{Kinds: kindBits(mpi.KindInt64, mpi.KindFloat32, mpi.KindFloat64), Ops: opBits(mpi.OpSum, mpi.OpMin), MaxPayload: 0, MaxOutstanding: 2}
	minOf := func(ws ...[]uint64) []uint64 {
		out := slices.Clone(ws[0])
		for _, w := range ws[1:] {
			for i := range out {
				out[i] = min(out[i], w[i])
			}
		}
		return out
	}
	got, ok := CapsFromWords(minOf(a.Words(), b.Words(), NoCaps()))
	want := Caps{Kinds: kindBits(mpi.KindInt64, mpi.KindFloat32), Ops: opBits(mpi.OpSum), MaxPayload: 1024, MaxOutstanding: 2}
	if !ok || got != want {
		t.Errorf("agreed %+v ok %v, want %+v", got, ok, want)
	}
	if got, ok := CapsFromWords(minOf(b.Words(), NoCaps())); !ok || got.MaxPayload != 0 || got.MaxOutstanding != 2 {
		t.Errorf("no payload limit on every member: %+v ok %v", got, ok)
	}
	if _, ok := CapsFromWords(minOf(a.Words(), FailedWords())); ok {
		t.Error("a failed member did not fail the agreement")
	}
	if _, ok := CapsFromWords(a.Words()[:3]); ok {
		t.Error("a short vector decoded")
	}
	if s := want.String(); !strings.Contains(s, "int64,float32") || !strings.Contains(s, "ops sum") || !strings.Contains(s, "1024 B") {
		t.Errorf("String() = %q", s)
	}
}

// TestSharpMapping: SHArP's enum numbering (public API: UNSIGNED=0, INT,
// UNSIGNED_LONG, LONG, FLOAT, DOUBLE, UNSIGNED_SHORT, SHORT, FLOAT_SHORT,
// BFLOAT16, UINT8=10, INT8=11; ops MAX=0, MIN, SUM, PROD, LAND, BAND, LOR,
// BOR, LXOR, BXOR) mapped to kinds and ops, as written here from the
// header, not from the code under test.
func TestSharpMapping(t *testing.T) {
	all := uint64(1<<12 - 1)
	allOps := uint64(1<<10 - 1) // MAX..BXOR, PROD included
	c := capsFromSharp(all, allOps, 256, 3)
	wantKinds := allKinds() &^ kindBits(mpi.KindComplex64, mpi.KindComplex128)
	wantOps := allOpsMask() &^ opBits(mpi.OpProd)
	if c.Kinds != wantKinds || c.Ops != wantOps || c.MaxPayload != 256 || c.MaxOutstanding != 3 || !c.OnePerNode {
		t.Errorf("all of SHArP: %+v", c)
	}
	// Only INT (1) and DOUBLE (5); only SUM (2) and BXOR (9).
	c = capsFromSharp(1<<1|1<<5, 1<<2|1<<9, 0, 0)
	if c.Kinds != kindBits(mpi.KindInt32, mpi.KindFloat64) || c.Ops != opBits(mpi.OpSum, mpi.OpBxor) || c.MaxOutstanding != 1 {
		t.Errorf("int+double, sum+bxor: %+v", c)
	}
	// Each SHArP type bit alone, and each op bit alone.
	byType := map[int]uint64{0: kindBits(mpi.KindUint32), 1: kindBits(mpi.KindInt32), 2: kindBits(mpi.KindUint64),
		3: kindBits(mpi.KindInt64), 4: kindBits(mpi.KindFloat32), 5: kindBits(mpi.KindFloat64),
		6: kindBits(mpi.KindUint16), 7: kindBits(mpi.KindInt16), 8: 0, 9: 0, // no Go float16 or bfloat16
		10: kindBits(mpi.KindUint8), 11: kindBits(mpi.KindInt8)}
	for bit, want := range byType {
		if got := capsFromSharp(1<<uint(bit), 0, 0, 1).Kinds; got != want {
			t.Errorf("SHArP type %d alone: kinds %#x, want %#x", bit, got, want)
		}
	}
	byOp := map[int]uint64{0: opBits(mpi.OpMax), 1: opBits(mpi.OpMin), 2: opBits(mpi.OpSum), 3: 0, // prod left out
		4: opBits(mpi.OpLand), 5: opBits(mpi.OpBand), 6: opBits(mpi.OpLor), 7: opBits(mpi.OpBor),
		8: opBits(mpi.OpLxor), 9: opBits(mpi.OpBxor), 10: 0, 11: 0} // no MAXLOC/MINLOC
	for bit, want := range byOp {
		if got := capsFromSharp(0, 1<<uint(bit), 0, 1).Ops; got != want {
			t.Errorf("SHArP op %d alone: ops %#x, want %#x", bit, got, want)
		}
	}
}

func allOpsMask() uint64 { return allOps() }

func TestEnvAndOffloads(t *testing.T) {
	env := []string{"PATH=/bin", "OMPI_MCA_coll_hcoll_enable=1", "HCOLL_ENABLE_SHARP=3", "UCC_CL_BASIC_TLS=ucp,sharp",
		"OMPI_MCA_coll_ucc_enable=1", "SHARP_COLL_ENABLE_SAT=1", "MV2_ENABLE_SHARP=1", "HOME=/root"}
	got := Env(env)
	want := []string{"HCOLL_ENABLE_SHARP=3", "MV2_ENABLE_SHARP=1", "OMPI_MCA_coll_hcoll_enable=1", "OMPI_MCA_coll_ucc_enable=1",
		"SHARP_COLL_ENABLE_SAT=1", "UCC_CL_BASIC_TLS=ucp,sharp"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
	off := strings.Join(MPIOffloads(got), "; ")
	for _, s := range []string{"hcoll enabled with HCOLL_ENABLE_SHARP=3", "coll/ucc enabled with UCC_CL_BASIC_TLS=ucp,sharp", "MV2_ENABLE_SHARP"} {
		if !strings.Contains(off, s) {
			t.Errorf("MPIOffloads: %q lacks %q", off, s)
		}
	}
	if len(MPIOffloads(Env([]string{"OMPI_MCA_coll_hcoll_enable=0"}))) != 0 {
		t.Error("hcoll disabled reported as an offload")
	}
}

func TestDevices(t *testing.T) {
	sys := t.TempDir()
	mk := func(path, val string) {
		p := filepath.Join(sys, "class", "infiniband", path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(val+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("mlx5_1/device/numa_node", "1")
	mk("mlx5_1/ports/1/link_layer", "Ethernet")
	mk("mlx5_1/ports/1/state", "4: ACTIVE")
	mk("mlx5_0/device/numa_node", "0")
	mk("mlx5_0/ports/1/link_layer", "InfiniBand")
	mk("mlx5_0/ports/1/state", "4: ACTIVE")
	mk("mlx5_0/ports/2/link_layer", "InfiniBand")
	mk("mlx5_0/ports/2/state", "1: DOWN")
	d := Devices(sys)
	if len(d) != 2 || d[0].Name != "mlx5_0" || d[0].NUMA != 0 || len(d[0].Ports) != 2 || d[1].Name != "mlx5_1" || d[1].NUMA != 1 {
		t.Fatalf("Devices = %+v", d)
	}
	if !d[0].Usable() || d[1].Usable() {
		t.Errorf("usable: InfiniBand ACTIVE yes (%v), RoCE no (%v)", d[0].Usable(), d[1].Usable())
	}
	if got := Devices(t.TempDir()); got != nil {
		t.Errorf("no infiniband class: %+v", got)
	}
}

func TestOpenAndAbsentLibrary(t *testing.T) {
	if _, err := Open("nccl", ""); !Fallback(err) {
		t.Errorf("unknown backend: %v", err)
	}
	b, err := Open("libsharp", "/nonexistent/libsharp_coll.so")
	if err != nil || b.Name() != "libsharp" {
		t.Fatalf("Open libsharp: %v %v", b, err)
	}
	p := Detect("/nonexistent/libsharp_coll.so", t.TempDir())
	if p.Loaded || !errors.Is(p.LoadErr, ErrUnavailable) || !Fallback(p.LoadErr) || len(p.Devices) != 0 {
		t.Errorf("Detect of a missing library: %+v", p)
	}
	// A library without the entry points is refused by name.
	if _, err := loadLib("libc.so.6"); err == nil || !strings.Contains(err.Error(), "sharp_coll_init") {
		t.Errorf("libc as libsharp_coll: %v", err)
	}
}
