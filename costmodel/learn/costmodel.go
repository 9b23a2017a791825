package learn

import "github.com/dpmlgo/dpml/costmodel"

// The learner speaks the cost model's vocabulary: its keys, arms, layouts
// and classes are costmodel's, and so are the tables it starts from and
// saves into.
type (
	Key         = costmodel.Key
	Arm         = costmodel.Arm
	Model       = costmodel.Model
	Layout      = costmodel.Layout
	ElemClass   = costmodel.ElemClass
	OpClass     = costmodel.OpClass
	Table       = costmodel.Table
	Entry       = costmodel.Entry
	MeasuredArm = costmodel.MeasuredArm
	Provenance  = costmodel.Provenance
)
