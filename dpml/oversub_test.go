package dpml

import (
	"testing"

	"github.com/dpmlgo/dpml/leaders"
)

func TestOversubscribed(t *testing.T) {
	one := func(cpus ...int) leaders.Place { return leaders.Place{CPUs: cpus, Primary: cpus[0]} }
	tests := []struct {
		name   string
		places []leaders.Place
		want   bool
	}{
		{"bound one per core", []leaders.Place{one(0), one(1), one(2)}, false},
		{"unbound on enough cores", []leaders.Place{one(0, 1, 2, 3), one(0, 1, 2, 3)}, false},
		{"two ranks on one core", []leaders.Place{one(0), one(0)}, true},
		{"four ranks on two cores", []leaders.Place{one(0, 1), one(0, 1), one(0, 1), one(0, 1)}, true},
		{"unknown placement", []leaders.Place{one(0), leaders.Unknown}, true},
	}
	for _, tc := range tests {
		if got := oversubscribed(tc.places); got != tc.want {
			t.Errorf("%s: oversubscribed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
