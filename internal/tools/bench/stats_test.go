package bench

import (
	"github.com/dpmlgo/dpml/internal/tools/results"
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want results.Summary
	}{
		{"one", []float64{5}, results.Summary{N: 1, Min: 5, Max: 5, Mean: 5, Median: 5, P25: 5, P75: 5, P99: 5}},
		{"two", []float64{3, 1}, results.Summary{N: 2, Min: 1, Max: 3, Mean: 2, Median: 2, P25: 1.5, P75: 2.5, P99: 2.98, Stddev: math.Sqrt2}},
		{"odd", []float64{5, 1, 4, 2, 3}, results.Summary{N: 5, Min: 1, Max: 5, Mean: 3, Median: 3, P25: 2, P75: 4, P99: 4.96, Stddev: math.Sqrt(2.5)}},
		{"even", []float64{1, 2, 3, 4}, results.Summary{N: 4, Min: 1, Max: 4, Mean: 2.5, Median: 2.5, P25: 1.75, P75: 3.25, P99: 3.97, Stddev: math.Sqrt(5.0 / 3)}},
		{"outlier", []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 1000}, results.Summary{N: 10, Min: 10, Max: 1000, Mean: 109, Median: 10, P25: 10, P75: 10, P99: 910.9, Stddev: math.Sqrt(98010)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]float64(nil), tc.in...)
			got, err := Summarize(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			for i := range orig {
				if orig[i] != tc.in[i] {
					t.Fatalf("Summarize modified its input: %v", tc.in)
				}
			}
			w := tc.want
			if got.N != w.N || !near(got.Min, w.Min) || !near(got.Max, w.Max) || !near(got.Mean, w.Mean) ||
				!near(got.Median, w.Median) || !near(got.P25, w.P25) || !near(got.P75, w.P75) ||
				!near(got.P99, w.P99) || !near(got.Stddev, w.Stddev) {
				t.Errorf("Summarize(%v) =\n %+v, want\n %+v", tc.in, got, w)
			}
			if !near(got.IQR(), w.P75-w.P25) {
				t.Errorf("IQR = %v", got.IQR())
			}
		})
	}
}

func TestSummarizeErrors(t *testing.T) {
	if _, err := Summarize(nil); err == nil {
		t.Error("Summarize(nil): want error")
	}
	if _, err := Summarize([]float64{1, math.NaN()}); err == nil {
		t.Error("Summarize(NaN): want error")
	}
}

func TestScale(t *testing.T) {
	s, _ := Summarize([]float64{1e-6, 2e-6, 3e-6})
	u := s.Scale(1e6)
	if !near(u.Median, 2) || !near(u.Min, 1) || !near(u.Max, 3) || !near(u.Stddev, 1) || u.N != 3 {
		t.Errorf("Scale: %+v", u)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {1, 4}, {0.5, 2.5}, {1.0 / 3, 2}, {-1, 1}, {2, 4}} {
		if got := Quantile(xs, tc.q); !near(got, tc.want) {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile(nil) should be NaN")
	}
}

func TestMaxOverRanks(t *testing.T) {
	got, err := MaxOverRanks([][]float64{{1, 5, 3}, {2, 4, 3}, {0, 0, 9}})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2, 5, 9}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MaxOverRanks = %v, want %v", got, want)
		}
	}
	if _, err := MaxOverRanks([][]float64{{1, 2}, {1}}); err == nil {
		t.Error("ragged rows: want error")
	}
	if _, err := MaxOverRanks(nil); err == nil {
		t.Error("no ranks: want error")
	}
}

func TestPolicyIterations(t *testing.T) {
	p := Policy{Target: 200 * time.Millisecond, Min: 10, Max: 1000}
	tests := []struct {
		perIter float64
		want    int
	}{
		{1e-6, 1000}, // 200000 wanted, clamped to Max
		{1e-4, 1000}, // exactly 2000 -> Max
		{2e-4, 1000}, // exactly 1000
		{3e-4, 667},  // ceil(666.67)
		{1e-3, 200},  // 200
		{0.05, 10},   // 4 -> Min
		{10, 10},     // slow call -> Min
		{0, 1000},    // unmeasurable -> Max
		{-1, 1000},   // clock went backwards -> Max
		{math.NaN(), 1000},
	}
	for _, tc := range tests {
		if got := p.Iterations(tc.perIter); got != tc.want {
			t.Errorf("Iterations(%v) = %d, want %d", tc.perIter, got, tc.want)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p  Policy
		ok bool
	}{
		{DefaultPolicy, true},
		{Policy{Target: 0, Min: 1, Max: 1}, true},
		{Policy{Target: time.Second, Min: 0, Max: 10}, false},
		{Policy{Target: time.Second, Min: 10, Max: 5}, false},
		{Policy{Target: -time.Second, Min: 1, Max: 5}, false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}

func TestWarmupEstimate(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{100, 2}, 2},
		{[]float64{100, 2, 4, 3}, 3}, // first (cold) dropped, median of 2,4,3
		{[]float64{100, 2, 4}, 3},
	}
	for _, tc := range tests {
		if got := WarmupEstimate(tc.in); !near(got, tc.want) {
			t.Errorf("WarmupEstimate(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
