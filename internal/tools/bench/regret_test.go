package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRegret(t *testing.T) {
	r := Regret(64, []float64{3, 2, 0.9, 1, 1.5}, 1)
	want := []float64{2, 3, 3, 3, 3.5}
	for i := range want {
		if r.Cum[i] != want[i] {
			t.Fatalf("cum[%d] = %v, want %v (all %v)", i, r.Cum[i], want[i], r.Cum)
		}
	}
	dir := t.TempDir()
	if err := WriteRegretCSV(filepath.Join(dir, "r.csv"), []RegretSeries{r}); err != nil {
		t.Fatal(err)
	}
	if err := PlotRegret([]RegretSeries{r, Regret(1024, []float64{5, 1, 1}, 1)}, "t", filepath.Join(dir, "r.png")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"r.csv", "r.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s not written: %v", f, err)
		}
	}
}
