//go:build !dpmltrace || !amd64

package dpml

// The default build records nothing: see trace.go (build tag dpmltrace).

type tracer struct{}

// traceBuild: the step trace is compiled in (it keeps every call in the
// Go executor, whose steps it marks).
const traceBuild = false

func (c *Comm) mark(tracePoint) {}
func (c *Comm) markDone()       {}
func (c *Comm) dumpTrace()      {}
