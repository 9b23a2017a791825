//go:build !dpmltrace || !amd64

package dpml

// The default build records nothing: see trace.go (build tag dpmltrace).

type tracer struct{}

func (c *Comm) mark(tracePoint) {}
func (c *Comm) markDone()       {}
func (c *Comm) dumpTrace()      {}
