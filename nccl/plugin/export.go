package main

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -ldl -pthread
#include <stdlib.h>
#include "dpml_nccl_tuner.h"
*/
import "C"

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/dpmlgo/dpml/nccl"
)

// gitCommit is set by make build (-ldflags -X main.gitCommit=...): the
// init log line names the build, which a device run's log records.
var gitCommit string

// dpmlNcclFill computes a communicator's answers into ctx: one choice per
// collective and size bucket (package nccl's Policy), and the init log
// line. gpu and link describe the machine ("" unknown; machineNote says
// how NVML answered), for the built-in data. It returns 0, or 1 when the answers fell back to NCCL's default
// (an error, which the line explains). It never panics into C: a panic
// becomes a return of 1 (the C side then resets every answer).
//
//export dpmlNcclFill
func dpmlNcclFill(ctx *C.dpml_nccl_ctx, nRanks, nNodes C.size_t, policy, table, gpu, link, machineNote *C.char) (rc C.int) {
	if ctx == nil {
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			setMsg(ctx, fmt.Sprintf("internal error (%v); NCCL's default for every call", r))
			rc = 1
		}
	}()
	lay := nccl.Layout{Ranks: clampInt(nRanks), Nodes: clampInt(nNodes)}
	var pol, tab string
	if policy != nil {
		pol = C.GoString(policy)
	}
	if table != nil {
		tab = C.GoString(table)
	}
	var m nccl.Machine
	var note string
	if gpu != nil {
		m.GPU = C.GoString(gpu)
	}
	if link != nil {
		m.Link = C.GoString(link)
	}
	if machineNote != nil {
		note = C.GoString(machineNote)
	}
	p, err := fill(pol, tab, m, lay)
	for c := nccl.Coll(0); c < nccl.NumColls; c++ {
		for b := 0; b < nccl.NumBuckets; b++ {
			d := p.Choice(c, b)
			ctx.choice[c][b] = C.dpml_nccl_choice{algo: C.int8_t(d.Algo), proto: C.int8_t(d.Proto), channels: C.uint8_t(d.Channels)}
		}
	}
	build := "dev"
	if len(gitCommit) >= 7 {
		build = gitCommit[:7]
	}
	msg := fmt.Sprintf("build %s, %d ranks on %d nodes: %s", build, lay.Ranks, lay.Nodes, p.Source)
	if note != "" && strings.HasPrefix(p.Source, "no built-in data") {
		msg += " (" + note + ")"
	}
	if err != nil {
		msg += ": " + err.Error() + "; NCCL's default for every call"
		rc = 1
	}
	setMsg(ctx, msg)
	return rc
}

// dpmlNcclFloor decides the channel floor of a communicator of nRanks
// ranks that the preloaded library is about to create (floor.c): the
// minCTAs to set, 0 for none, or -1 for an error (a setting that does not
// parse, a table that does not read: no floor). hostGPUs is the number of
// GPUs NVML lists on this host (0: unknown); floor, policy, table are
// DPML_NCCL_FLOOR, DPML_NCCL_POLICY and DPML_NCCL_TABLE, gpu and link the
// machine. msg (msgLen bytes) receives the reason, NUL-terminated. It
// never panics into C.
//
//export dpmlNcclFloor
func dpmlNcclFloor(nRanks, hostGPUs C.int, floor, policy, table, gpu, link *C.char, msg *C.char, msgLen C.int) (ch C.int) {
	say := func(s string) {
		if msg == nil || msgLen < 1 {
			return
		}
		buf := unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(msgLen))
		n := copy(buf[:len(buf)-1], s)
		buf[n] = 0
	}
	defer func() {
		if r := recover(); r != nil {
			say(fmt.Sprintf("internal error (%v)", r))
			ch = -1
		}
	}()
	str := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	fs, err := nccl.ParseFloorSetting(str(floor))
	if err != nil {
		say(err.Error())
		return -1
	}
	s, err := nccl.ParseSettings(str(policy), str(table))
	if err != nil && fs.Mode == nccl.FloorAuto {
		say("DPML_NCCL_POLICY does not parse")
		return 0
	}
	s.GPU, s.Link = str(gpu), str(link)
	d, err := nccl.DecideFloor(nccl.FloorQuery{Ranks: int(nRanks), HostGPUs: int(hostGPUs), Settings: s, Floor: fs})
	if err != nil {
		say(d.Source + ": " + err.Error())
		return -1
	}
	say(d.Source)
	return C.int(d.Channels)
}

// fill parses the settings and computes the policy; on a settings error
// the policy answers NCCL's default (nccl.New does the same for tables).
func fill(policy, table string, m nccl.Machine, lay nccl.Layout) (*nccl.Policy, error) {
	s, err := nccl.ParseSettings(policy, table)
	s.GPU, s.Link = m.GPU, m.Link
	if err != nil {
		p, _ := nccl.New(nccl.Settings{Mode: nccl.ModeOff}, lay)
		p.Source = "off"
		return p, err
	}
	return nccl.New(s, lay)
}

// clampInt converts a size_t NCCL passed to an int (values above 2^31 are
// nonsense for ranks and nodes; they become 1, which no table entry names).
func clampInt(v C.size_t) int {
	if uint64(v) > math.MaxInt32 || v == 0 {
		return 1
	}
	return int(v)
}

// setMsg copies s (truncated) into ctx.msg, NUL-terminated.
func setMsg(ctx *C.dpml_nccl_ctx, s string) {
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&ctx.msg[0])), len(ctx.msg))
	n := copy(buf[:len(buf)-1], s)
	buf[n] = 0
}
