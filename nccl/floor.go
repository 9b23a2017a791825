package nccl

import (
	"fmt"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
)

// FloorMode is how the preloaded library chooses a communicator's channel
// floor (DPML_NCCL_FLOOR).
type FloorMode int

const (
	FloorAuto  FloorMode = iota // the floor of the plugin's data for this machine
	FloorOff                    // no floor
	FloorFixed                  // FloorSetting.Channels for every communicator
)

// FloorSetting is DPML_NCCL_FLOOR parsed.
type FloorSetting struct {
	Mode     FloorMode
	Channels int // FloorFixed
}

// ParseFloorSetting parses DPML_NCCL_FLOOR (empty: auto) with the
// declaration in package config: auto, off, or 1..64.
func ParseFloorSetting(s string) (FloorSetting, error) {
	if strings.TrimSpace(s) == "" {
		return FloorSetting{Mode: FloorAuto}, nil
	}
	v, err := config.Lookup(config.NCCLFloor)
	if err != nil {
		return FloorSetting{Mode: FloorOff}, err
	}
	val, err := v.Parse(s)
	if err != nil {
		return FloorSetting{Mode: FloorOff}, err
	}
	switch val.Keyword {
	case "auto":
		return FloorSetting{Mode: FloorAuto}, nil
	case "off":
		return FloorSetting{Mode: FloorOff}, nil
	}
	return FloorSetting{Mode: FloorFixed, Channels: int(val.Int)}, nil
}

// FloorQuery is what the preloaded library knows when a program creates a
// communicator: its rank count (not its nodes, which NCCL learns only
// while it creates it), the GPUs of this host, and the settings.
type FloorQuery struct {
	Ranks int
	// HostGPUs is the number of GPUs NVML lists on this host (0: unknown).
	HostGPUs int
	// Settings are DPML_NCCL_POLICY and DPML_NCCL_TABLE, and the machine
	// (GPU model and link) for the built-in data.
	Settings Settings
	Floor    FloorSetting
}

// FloorDecision is the floor for one communicator: Channels for
// ncclConfig_t minCTAs (0: none) and why, for the log line.
type FloorDecision struct {
	Channels int
	Source   string
}

// DecideFloor returns the channel floor of a communicator. It depends
// only on what every rank of the communicator sees alike (its rank count,
// the settings and the machine), so the ranks agree. An error (a setting
// that does not parse, a table that does not read) comes with no floor.
//
// With DPML_NCCL_FLOOR=auto the floor is the plugin's data's, and only
// where the plugin answers from that data (policy auto): the built-in data
// for Ranks GPUs of the model and link on one node (its Floor), or with a
// table its largest channel answer for that layout (TableFloor). The
// communicator's nodes are not known yet, so a communicator is taken to be
// one node only when its ranks do not exceed the GPUs of this host; a
// larger one gets no floor.
func DecideFloor(q FloorQuery) (FloorDecision, error) {
	switch q.Floor.Mode {
	case FloorOff:
		return FloorDecision{Source: "DPML_NCCL_FLOOR=off"}, nil
	case FloorFixed:
		if q.Floor.Channels < 1 || q.Floor.Channels > MaxChannels {
			return FloorDecision{Source: "bad DPML_NCCL_FLOOR"}, fmt.Errorf("DPML_NCCL_FLOOR=%d: want 1..%d", q.Floor.Channels, MaxChannels)
		}
		return FloorDecision{Channels: q.Floor.Channels, Source: fmt.Sprintf("DPML_NCCL_FLOOR=%d", q.Floor.Channels)}, nil
	case FloorAuto:
	default:
		return FloorDecision{Source: "bad DPML_NCCL_FLOOR"}, fmt.Errorf("DPML_NCCL_FLOOR: unknown mode %d", int(q.Floor.Mode))
	}
	s := q.Settings
	if s.Mode != ModeAuto {
		return FloorDecision{Source: fmt.Sprintf("DPML_NCCL_POLICY=%s: the floor follows the plugin's data under auto only", s.Mode)}, nil
	}
	switch {
	case q.Ranks < 2:
		return FloorDecision{Source: fmt.Sprintf("%d rank", q.Ranks)}, nil
	case q.HostGPUs < 1:
		return FloorDecision{Source: "the GPUs of this host are unknown (NVML)"}, nil
	case q.Ranks > q.HostGPUs:
		return FloorDecision{Source: fmt.Sprintf("%d ranks, more than the %d GPUs of this host: the communicator may span nodes", q.Ranks, q.HostGPUs)}, nil
	}
	lay := Layout{Ranks: q.Ranks, Nodes: 1}
	if s.Table != "" {
		tb, err := loadTable(s.Table)
		if err != nil {
			return FloorDecision{Source: "DPML_NCCL_TABLE does not read"}, fmt.Errorf("DPML_NCCL_TABLE=%s: %w", s.Table, err)
		}
		n, err := TableFloor(tb, lay)
		if err != nil {
			return FloorDecision{Source: "DPML_NCCL_TABLE is inconsistent"}, fmt.Errorf("DPML_NCCL_TABLE=%s: %w", s.Table, err)
		}
		if n == 0 {
			return FloorDecision{Source: fmt.Sprintf("table %s answers no channel count for layout %s", s.Table, lay)}, nil
		}
		return FloorDecision{Channels: n, Source: fmt.Sprintf("table %s: its largest channel answer for layout %s", s.Table, lay)}, nil
	}
	m := Machine{GPUs: q.Ranks, Nodes: 1, GPU: s.GPU, Link: s.Link}
	b, ok, err := LookupBuiltin(m)
	switch {
	case err != nil:
		return FloorDecision{Source: "built-in data does not read"}, err
	case !ok:
		return FloorDecision{Source: fmt.Sprintf("no built-in data for %s", m)}, nil
	case b.Floor == nil:
		return FloorDecision{Source: fmt.Sprintf("built-in data for %s has no floor", b.Key)}, nil
	}
	return FloorDecision{Channels: b.Floor.Channels, Source: fmt.Sprintf("built-in data for %s (NCCL %s, %s)", b.Key, b.Provenance.NCCL, orDash(b.Provenance.Date))}, nil
}

// TableFloor returns the floor a table implies for layout lay: the
// largest channel count its entries answer for that layout (0: none). A
// communicator needs that many channels for every answer of the table to
// take effect; a table fitted from forced-channel sweeps (ForcedTable)
// answers the count that wins at the largest sizes there.
func TableFloor(tb *costmodel.Table, lay Layout) (int, error) {
	n := 0
	for i := range tb.Entries {
		en := &tb.Entries[i]
		if en.Coll == "" || en.Nodes != lay.Nodes || en.PPN != lay.PPN() {
			continue
		}
		d, err := EntryDecision(en)
		if err != nil {
			return 0, err
		}
		n = max(n, d.Channels)
	}
	return n, nil
}
