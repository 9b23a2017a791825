//go:build !dpmltrace || !amd64

package main

import "github.com/dpmlgo/dpml/dpml"

// traceC does nothing outside dpmltrace builds (trace.go).
func traceC(*dpml.Comm) {}
