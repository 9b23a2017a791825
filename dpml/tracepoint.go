package dpml

// tracePoint names the points of a call that a dpmltrace build time-stamps
// (trace.go).
type tracePoint int

const (
	tpEnter tracePoint = iota // allreduce entered
	tpPlan                    // plan chosen, executor starting
	tpKids                    // this rank's children seen (tree) or the node's inputs (leader)
	tpUp                      // this rank's input or partial published (in flag raised)
	tpOut                     // leader: result published (out flag raised)
	tpSeen                    // the results seen (out flags waited for)
	tpExit                    // result copied, returning
	// The drop-in library's C steps (dropinhook.TraceC), where it is the caller.
	tpCEnter // MPI_Allreduce entered
	tpCGo    // the call into Go
	tpCBack  // back from Go
	tpCLeave // MPI_Allreduce returning
	tpCount
)

var tracePointNames = [tpCount]string{"enter", "plan", "kids", "up", "out", "seen", "exit", "centre", "cgo", "cback", "cleave"}
