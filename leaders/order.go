package leaders

import (
	"cmp"
	"slices"
)

// Spread returns the evenly-spread order of the positions 0..n-1, defined by
// recursive bisection:
//
//	Spread(0) = []
//	Spread(1) = [0]
//	Spread(n) = interleave(Spread(h), h + Spread(n-h)),  h = ceil(n/2)
//
// where interleave takes one element from each list in turn, starting with
// the first (which is never shorter), and h + L adds h to every element of L.
// For n = 2^m this is the bit-reversal (van der Corput) permutation, e.g.
// Spread(8) = 0 4 2 6 1 5 3 7. For other n, at every level of the bisection
// the two halves get counts that differ by at most one in every prefix, e.g.
// Spread(6) = 0 3 2 5 1 4, Spread(5) = 0 3 2 4 1, Spread(3) = 0 2 1.
// So any prefix of length l is spread over the positions as evenly as the
// bisection allows.
func Spread(n int) []int {
	if n <= 0 {
		return []int{}
	}
	if n == 1 {
		return []int{0}
	}
	h := (n + 1) / 2
	lo, hi := Spread(h), Spread(n-h)
	for i := range hi {
		hi[i] += h
	}
	return roundRobin([][]int{lo, hi})
}

// roundRobin takes the first element of each list, then the second of each,
// and so on, skipping lists that have run out.
func roundRobin(lists [][]int) []int {
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	out := make([]int, 0, total)
	for i := 0; len(out) < total; i++ {
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
			}
		}
	}
	return out
}

// group is a set of local ranks sharing a socket or NUMA key.
type group struct {
	key     int   // socket or NUMA id; -1 unknown
	nearNIC bool  // some member is NearNIC
	ranks   []int // ascending local rank
}

// groupBy splits ranks by key(rank) and orders the groups: those with a
// NearNIC member first, then by ascending key, unknown (-1) last.
func groupBy(places []Place, ranks []int, key func(Place) int) []group {
	var gs []group
	for _, r := range ranks {
		k := key(places[r])
		i := slices.IndexFunc(gs, func(g group) bool { return g.key == k })
		if i < 0 {
			gs = append(gs, group{key: k})
			i = len(gs) - 1
		}
		gs[i].ranks = append(gs[i].ranks, r)
		gs[i].nearNIC = gs[i].nearNIC || places[r].NearNIC
	}
	slices.SortFunc(gs, func(a, b group) int {
		switch {
		case a.nearNIC != b.nearNIC:
			if a.nearNIC {
				return -1
			}
			return 1
		case (a.key < 0) != (b.key < 0):
			if a.key < 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.key, b.key)
	})
	return gs
}

// sockets groups all local ranks by socket, in Order's socket order.
func sockets(places []Place) []group {
	all := make([]int, len(places))
	for i := range all {
		all[i] = i
	}
	return groupBy(places, all, func(p Place) int { return p.Socket })
}

// Order returns the leader order of the local ranks 0..len(places)-1, a
// permutation such that every prefix of length l is a good set of l
// leaders: leaders 0..l-1 are order[0..l-1]. It is defined as follows.
//
//  1. Ranks are grouped by Socket, each socket's ranks by NUMA node, each
//     NUMA domain's ranks by Core. Sockets and NUMA nodes are ordered with
//     those holding a NearNIC rank first, then by ascending id, unknown (-1)
//     last. The cores of a domain, sorted by id, are taken in Spread order.
//  2. The ranks sharing a core (SMT siblings, or ranks with no core
//     information) are sorted by Primary CPU, then local rank, and taken in
//     Spread order.
//  3. Each level's sequence is the round-robin of its groups' sequences
//     (one from each group in turn; a group that runs out is skipped): a
//     domain's sequence takes the first rank of every core before any
//     second one, a socket's alternates its NUMA domains, and the node's
//     alternates its sockets.
//
// So the first leaders are on distinct sockets, then distinct NUMA nodes,
// then evenly spread over the cores, with SMT siblings last. When all places
// are equal (no topology information, e.g. unbound ranks) Order is
// Spread(len(places)): ppn=8 gives 0 4 2 6 1 5 3 7. The same holds for ranks
// bound to one core each within one domain. Order is a pure function of
// places: every rank computes the same order from the same allgathered
// places.
func Order(places []Place) []int {
	var perSocket [][]int
	for _, s := range sockets(places) {
		var perNUMA [][]int
		for _, d := range groupBy(places, s.ranks, func(p Place) int { return p.NUMA }) {
			perNUMA = append(perNUMA, domainOrder(places, d.ranks))
		}
		perSocket = append(perSocket, roundRobin(perNUMA))
	}
	return roundRobin(perSocket)
}

// domainOrder orders the ranks of one NUMA domain: cores in Spread order of
// their ids, the ranks of a core in Spread order of (Primary, rank), and the
// round-robin over the cores.
func domainOrder(places []Place, ranks []int) []int {
	var cores []group
	for _, r := range ranks {
		k := places[r].Core
		i := slices.IndexFunc(cores, func(g group) bool { return g.key == k })
		if i < 0 {
			cores = append(cores, group{key: k})
			i = len(cores) - 1
		}
		cores[i].ranks = append(cores[i].ranks, r)
	}
	slices.SortFunc(cores, func(a, b group) int { return cmp.Compare(a.key, b.key) })
	perCore := make([][]int, len(cores))
	for i, ci := range Spread(len(cores)) {
		rs := cores[ci].ranks // ascending rank already
		slices.SortStableFunc(rs, func(a, b int) int { return cmp.Compare(places[a].Primary, places[b].Primary) })
		seq := make([]int, len(rs))
		for j, pos := range Spread(len(rs)) {
			seq[j] = rs[pos]
		}
		perCore[i] = seq
	}
	return roundRobin(perCore)
}

// SocketLeaders returns one leader per socket, for the socket-level
// variant: the first rank of each socket in Order, in Order's socket order
// (which is also the first len(result) entries of Order). Ranks with an
// unknown socket (-1) count as one more socket. Empty for no places.
func SocketLeaders(places []Place) []int {
	n := len(sockets(places))
	return slices.Clone(Order(places)[:n])
}

// NodeLeader returns the node leader, Order(places)[0]: the first rank of
// the first socket (the one nearest an RDMA device, if known). It is -1 for
// no places.
func NodeLeader(places []Place) int {
	if o := Order(places); len(o) > 0 {
		return o[0]
	}
	return -1
}
