package learn

import "testing"

// TestArmStat checks each statistic against values worked out by hand.
func TestArmStat(t *testing.T) {
	cases := []struct {
		name    string
		st      Stat
		samples []float64
		want    float64
	}{
		{"min/3", StatMin, []float64{3, 1, 2}, 1},
		{"median/3", StatMedian, []float64{3, 1, 2}, 2},
		{"median/4", StatMedian, []float64{4, 1, 3, 2}, 2.5},
		// 8 samples: the largest two (100 and 9) are dropped, the mean
		// of 1..6 is 3.5.
		{"trimmed/8", StatTrimmed, []float64{5, 1, 9, 3, 100, 2, 4, 6}, 3.5},
		// 3 samples: 3/4 rounds down, nothing dropped.
		{"trimmed/3", StatTrimmed, []float64{3, 1, 2}, 2},
		// 4 samples: the largest is dropped.
		{"trimmed/4", StatTrimmed, []float64{1, 50, 2, 3}, 2},
		// The ring keeps the last 8: the first two (1000, 1000) are gone.
		{"trimmed/ring", StatTrimmed, []float64{1000, 1000, 5, 1, 9, 3, 100, 2, 4, 6}, 3.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a armStat
			for _, v := range tc.samples {
				a.add(v, tc.st)
			}
			if a.est != tc.want {
				t.Fatalf("est %v, want %v", a.est, tc.want)
			}
		})
	}
	if _, err := (Config{Budget: -1, Stat: Stat(len(Stats))}).normalize(); err == nil {
		t.Error("an unknown Stat normalized without error")
	}
}
