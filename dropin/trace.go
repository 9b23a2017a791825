//go:build dpmltrace && amd64

package main

// #cgo CFLAGS: -DDPML_TRACE
// #include "dropin.h"
import "C"

import (
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/runtime/dropinhook"
)

// traceC hands the C steps' time stamps (dropin.c's dpml_tc: this call's C
// entry and hand-over to Go, the previous routed call's return from Go and
// from the C wrapper) to the engine's trace (dpml/trace.go).
func traceC(d *dpml.Comm) {
	dropinhook.TraceC(d, int64(C.dpml_tc[0]), int64(C.dpml_tc[1]), int64(C.dpml_tc[2]), int64(C.dpml_tc[3]))
}
