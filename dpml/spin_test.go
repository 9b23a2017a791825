package dpml

import "testing"

// TestWaitSpin: the drop-in's longer polling applies only where it was
// measured to help and cannot starve MPI progress: DPML_SPIN unset, ranks
// owning their cores, one node. Mutation: dropping the one-node condition
// fails the "two nodes" case.
func TestWaitSpin(t *testing.T) {
	const def, own = 4000, 100000
	for _, c := range []struct {
		name    string
		set     bool
		oversub bool
		nodes   int
		own     int
		want    int
	}{
		{"one node, own cores", false, false, 1, own, own},
		{"not asked for (Go program, or no thread demoted)", false, false, 1, 0, def},
		{"DPML_SPIN set", true, false, 1, own, def},
		{"oversubscribed", false, true, 1, own, def},
		{"two nodes", false, false, 2, own, def},
	} {
		if got := waitSpin(def, c.set, c.oversub, c.nodes, c.own); got != c.want {
			t.Errorf("%s: waitSpin = %d, want %d", c.name, got, c.want)
		}
	}
}
