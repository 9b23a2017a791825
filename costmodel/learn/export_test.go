package learn

// Test helpers for the external tests (package learn_test, which may
// import costmodel/offline).
var (
	NewTestTuners = newTuners
	Bowl          = bowl
	Perturbed     = perturbed
)

// modelSurface prices arms with m for key k's size (offline.ModelSurface,
// for the internal tests).
func modelSurface(m Model, k Key, segBytes int) func(int, Arm) float64 {
	n, lay := k.Bytes(), k.Layout()
	return func(_ int, a Arm) float64 { return m.Breakdown(priced(a, segBytes), n, lay, k.Elem).Total }
}
