package bench

import "github.com/dpmlgo/dpml/leaders"

// DefaultRotateBytes is the -rotate total when the LLC size is unknown.
const DefaultRotateBytes = 64 << 20

// LLCBytes reads the last-level cache size (leaders.LLCBytes).
func LLCBytes() (int, error) { return leaders.LLCBytes() }

// RotateBytes is the default total size of the rotated buffer pairs: twice
// the last-level cache but at least DefaultRotateBytes, so every iteration
// of a rotated sweep reads and writes memory that is not cache-resident.
func RotateBytes(llc int) int {
	return max(DefaultRotateBytes, 2*llc)
}

// Arena sizes the rotated buffers of a sweep. With rotation, the send and
// receive arenas each hold half of totalBytes (but at least the largest
// message), and iteration j of a message of count elements uses window
// j mod Windows(count), i.e. elements [w*count, (w+1)*count) of both
// arenas. Without rotation there is one window.
type Arena struct {
	Elems  int  // elements per arena (send, receive and reference each)
	Rotate bool // whether windows rotate
}

// NewArena sizes the arenas for messages up to maxCount elements of
// elemSize bytes.
func NewArena(maxCount, elemSize int, rotate bool, totalBytes int) Arena {
	if !rotate {
		return Arena{Elems: maxCount}
	}
	half := totalBytes / 2 / elemSize
	return Arena{Elems: max(maxCount, half), Rotate: true}
}

// Windows returns the number of disjoint windows of count elements.
func (a Arena) Windows(count int) int {
	if !a.Rotate || count <= 0 {
		return 1
	}
	return max(1, a.Elems/count)
}

// Window returns the element offset of iteration j's window.
func (a Arena) Window(count, j int) int {
	return (j % a.Windows(count)) * count
}

// UsedWindows is how many distinct windows a run of n iterations touches.
func (a Arena) UsedWindows(count, n int) int {
	return min(a.Windows(count), max(n, 1))
}
