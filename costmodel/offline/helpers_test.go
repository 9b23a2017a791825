package offline

import (
	"math"

	"github.com/dpmlgo/dpml/plan"
)

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// deviceSegment is the engine's default segment for ppn ranks per node on
// the device of the testdata sweeps: 300 MiB of last-level cache, 1 MiB
// slots (DPML_SEGMENT_BYTES).
func deviceSegment(ppn int) int { return min(1<<20, plan.DefaultSegmentBytes(300<<20, ppn)) }
