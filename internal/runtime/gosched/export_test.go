package gosched

import "time"

// SetPaceEvery changes how often MPI calls yield, for tests; the returned
// function restores the previous interval.
func SetPaceEvery(d time.Duration) (restore func()) {
	old := paceEvery.Swap(int64(d))
	return func() { paceEvery.Store(old) }
}
