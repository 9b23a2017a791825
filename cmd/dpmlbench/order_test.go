package main

import (
	"slices"
	"testing"
)

// TestRoundOrder: every round's order is a permutation, the same for the
// same round, and over rounds each point is followed by several others
// (a rotation would give each point one successor inside a round).
// Mutation: roundOrder as a rotation fails it.
func TestRoundOrder(t *testing.T) {
	const n, rounds = 5, 40
	next := make([]map[int]bool, n)
	for i := range next {
		next[i] = map[int]bool{}
	}
	a, b := make([]int, n), make([]int, n)
	for j := range rounds {
		roundOrder(a, j)
		roundOrder(b, j)
		if !slices.Equal(a, b) {
			t.Fatalf("round %d: %v then %v", j, a, b)
		}
		s := slices.Clone(a)
		slices.Sort(s)
		for i, v := range s {
			if v != i {
				t.Fatalf("round %d: %v is not a permutation of 0..%d", j, a, n-1)
			}
		}
		for i := 0; i+1 < n; i++ {
			next[a[i]][a[i+1]] = true
		}
	}
	for p, s := range next {
		if len(s) < 3 {
			t.Errorf("point %d followed by only %v in %d rounds", p, s, rounds)
		}
	}
}
