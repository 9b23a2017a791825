package bench

import (
	"math"
	"testing"
)

func TestParseOpType(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"SUM", "sum"}, {" max", "max"}, {"bxor", "bxor"}} {
		if got, err := ParseOp(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseOp(%q) = %q, %v", tc.in, got, err)
		}
	}
	if _, err := ParseOp("avg"); err == nil {
		t.Error("ParseOp(avg): want error")
	}
	for _, tc := range []struct{ in, want string }{{"float", "float32"}, {"double", "float64"}, {"INT64", "int64"}, {"byte", "uint8"}, {"uint16", "uint16"}} {
		if got, err := ParseType(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseType(%q) = %q, %v", tc.in, got, err)
		}
	}
	if _, err := ParseType("complex64"); err == nil {
		t.Error("ParseType(complex64): want error")
	}
}

func TestExactValueRanges(t *testing.T) {
	for _, op := range Ops {
		seen := map[int]bool{}
		for r := 0; r < 8; r++ {
			for i := 0; i < 4096; i++ {
				v := ExactValue(op, r, i)
				seen[v] = true
				lim := 64
				switch op {
				case "sum":
					lim = 8
				case "prod":
					if v != 1 && v != 2 {
						t.Fatalf("%s: value %d not in {1,2}", op, v)
					}
				case "land", "lor", "lxor":
					lim = 3
				}
				if v < 0 || v >= lim {
					t.Fatalf("%s: value %d out of [0,%d)", op, v, lim)
				}
			}
		}
		if len(seen) < 2 {
			t.Errorf("%s: values do not vary: %v", op, seen)
		}
	}
	// Ranks differ (otherwise a plan that drops a rank could pass).
	same := 0
	for i := 0; i < 1000; i++ {
		if ExactValue("sum", 0, i) == ExactValue("sum", 1, i) {
			same++
		}
	}
	if same > 300 {
		t.Errorf("ranks 0 and 1 agree on %d of 1000 elements", same)
	}
}

// TestExactSumOrderIndependent checks the property -check relies on: float32
// sums of ExactValue inputs do not depend on the summation order.
func TestExactSumOrderIndependent(t *testing.T) {
	const ranks, n = 64, 1000
	for i := 0; i < n; i++ {
		var fwd, bwd, pair float32
		vals := make([]float32, ranks)
		for r := 0; r < ranks; r++ {
			vals[r] = float32(ExactValue("sum", r, i))
			fwd += vals[r]
		}
		for r := ranks - 1; r >= 0; r-- {
			bwd += vals[r]
		}
		for len(vals) > 1 { // tree order
			next := vals[:0:0]
			for j := 0; j+1 < len(vals); j += 2 {
				next = append(next, vals[j]+vals[j+1])
			}
			vals = next
		}
		pair = vals[0]
		if fwd != bwd || fwd != pair {
			t.Fatalf("element %d: %v %v %v", i, fwd, bwd, pair)
		}
	}
}

func TestFillPoisonCompare(t *testing.T) {
	a := make([]float64, 100)
	b := make([]float64, 100)
	Fill(a, "sum", 3, 10)
	Fill(b, "sum", 3, 10)
	if m := Compare(a, b); m != nil {
		t.Fatalf("identical fills differ: %v", m)
	}
	for j := range a {
		if a[j] != float64(ExactValue("sum", 3, 10+j)) {
			t.Fatalf("Fill[%d] = %v", j, a[j])
		}
	}
	Poison(b)
	for j, x := range b {
		if !math.IsNaN(x) {
			t.Fatalf("Poison: b[%d] = %v, want NaN", j, x)
		}
	}
	m := Compare(b, a)
	if m == nil || m.Count != 100 || m.First != 0 || m.Got != "NaN" {
		t.Fatalf("Compare(poisoned) = %+v", m)
	}
	copy(b, a)
	// Bitwise check: -0 == +0 numerically but not bitwise.
	a[42] = 0
	b[42] = math.Copysign(0, -1)
	if m := Compare(b, a); m == nil || m.Count != 1 || m.First != 42 {
		t.Fatalf("Compare one diff = %+v", m)
	}
	if m := Compare(a[:10], a[:12]); m == nil || m.Count != 2 || m.First != 10 {
		t.Fatalf("Compare length diff = %+v", m)
	}
	if Compare([]int8{}, []int8(nil)) != nil {
		t.Error("empty slices should compare equal")
	}
	u := []uint16{1, 2, 3}
	Poison(u)
	for _, x := range u {
		if x != math.MaxUint16 {
			t.Fatalf("Poison uint16: %v", u)
		}
	}
	if s := (Mismatch{Count: 2, First: 5, Got: "1", Want: "2"}).String(); s == "" {
		t.Error("empty Mismatch string")
	}
}

func TestArena(t *testing.T) {
	a := NewArena(1<<20, 4, false, 0)
	if a.Elems != 1<<20 || a.Windows(16) != 1 || a.Window(16, 5) != 0 || a.UsedWindows(16, 100) != 1 {
		t.Errorf("no rotation: %+v", a)
	}
	r := NewArena(1<<20, 4, true, 64<<20) // 32 MiB per arena = 8M float32
	if r.Elems != 8<<20 {
		t.Fatalf("Elems = %d", r.Elems)
	}
	tests := []struct{ count, windows, j, off, used, n int }{
		{1, 8 << 20, 5, 5, 100, 100},
		{1 << 20, 8, 9, 1 << 20, 8, 100},
		{8 << 20, 1, 3, 0, 1, 10},
		{3 << 20, 2, 3, 3 << 20, 2, 10},
	}
	for _, tc := range tests {
		if w := r.Windows(tc.count); w != tc.windows {
			t.Errorf("Windows(%d) = %d, want %d", tc.count, w, tc.windows)
		}
		if o := r.Window(tc.count, tc.j); o != tc.off {
			t.Errorf("Window(%d,%d) = %d, want %d", tc.count, tc.j, o, tc.off)
		}
		if u := r.UsedWindows(tc.count, tc.n); u != tc.used {
			t.Errorf("UsedWindows(%d,%d) = %d, want %d", tc.count, tc.n, u, tc.used)
		}
		// windows stay inside the arena
		if off := r.Window(tc.count, tc.windows-1); off+tc.count > r.Elems {
			t.Errorf("window out of arena: %d+%d > %d", off, tc.count, r.Elems)
		}
	}
	// A message larger than half the total gets an arena of its own size.
	big := NewArena(64<<20, 1, true, 64<<20)
	if big.Elems != 64<<20 || big.Windows(64<<20) != 1 {
		t.Errorf("big: %+v", big)
	}
}

func TestRotateBytes(t *testing.T) {
	if RotateBytes(0) != DefaultRotateBytes || RotateBytes(128<<20) != 256<<20 {
		t.Error("RotateBytes")
	}
}
