package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpmlgo/dpml/costmodel"
)

// Decision is the plugin's answer for one call: Channels (1..MaxChannels;
// 0 keeps NCCL's count) and optionally an algorithm and a protocol, set
// together or not at all (NCCL's header allows no other combination; -1:
// NCCL's choice).
type Decision struct {
	Channels    int
	Algo, Proto int
}

// Native is the answer "NCCL's default": nothing set.
var Native = Decision{Channels: 0, Algo: -1, Proto: -1}

// IsNative reports whether d leaves everything to NCCL.
func (d Decision) IsNative() bool { return d.Channels == 0 && d.Algo < 0 }

// String writes d as DPML_NCCL_POLICY's fixed form: "8", "16/ring/simple",
// "0/tree/ll" (NCCL's count, forced algorithm and protocol), or "native".
func (d Decision) String() string {
	if d.IsNative() {
		return "native"
	}
	s := strconv.Itoa(d.Channels)
	if d.Algo >= 0 {
		s += "/" + AlgoName(d.Algo) + "/" + ProtoName(d.Proto)
	}
	return s
}

// validate checks the ranges and the both-or-neither rule.
func (d Decision) validate() error {
	if d.Channels < 0 || d.Channels > MaxChannels {
		return fmt.Errorf("nccl: %d channels: want 0..%d", d.Channels, MaxChannels)
	}
	if (d.Algo < 0) != (d.Proto < 0) {
		return fmt.Errorf("nccl: algorithm and protocol must be set together (algo %q, proto %q)", AlgoName(d.Algo), ProtoName(d.Proto))
	}
	if d.Algo >= NumAlgos || d.Proto >= NumProtos {
		return fmt.Errorf("nccl: algorithm %d or protocol %d out of range", d.Algo, d.Proto)
	}
	return nil
}

// ParseDecision parses the fixed form "C" or "C/ALGO/PROTO" (C channels,
// 0 = NCCL's count).
func ParseDecision(s string) (Decision, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) != 1 && len(parts) != 3 {
		return Native, fmt.Errorf("nccl: %q: want CHANNELS or CHANNELS/ALGO/PROTO", s)
	}
	c, err := strconv.Atoi(parts[0])
	if err != nil {
		return Native, fmt.Errorf("nccl: %q: channel count: %w", s, err)
	}
	d := Decision{Channels: c, Algo: -1, Proto: -1}
	if len(parts) == 3 {
		if d.Algo, err = ParseAlgo(parts[1]); err != nil {
			return Native, err
		}
		if d.Proto, err = ParseProto(parts[2]); err != nil {
			return Native, err
		}
		if d.Algo < 0 || d.Proto < 0 {
			return Native, fmt.Errorf("nccl: %q: empty algorithm or protocol", s)
		}
	}
	if err := d.validate(); err != nil {
		return Native, err
	}
	return d, nil
}

// Mode is what the plugin answers (DPML_NCCL_POLICY).
type Mode int

const (
	ModeAuto  Mode = iota // the table where it covers the call, else the table's model or NCCL's; the model without a table
	ModeModel             // the channel model
	ModeOff               // NCCL's default for every call
	ModeFixed             // one Decision for every call
)

var modeNames = [...]string{"auto", "model", "off", "fixed"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Settings are the plugin's inputs besides the layout: DPML_NCCL_POLICY
// and DPML_NCCL_TABLE as the C side read them (getenv at each init, so a
// program may change them between communicators).
type Settings struct {
	Mode  Mode
	Fixed Decision // ModeFixed
	Table string   // path; "" = none
	// GPU and Link describe the machine (the plugin detects them, or
	// DPML_NCCL_GPU and DPML_NCCL_LINK set them): with the layout they
	// select the built-in data ModeAuto uses without a table.
	GPU, Link string
}

// ParseSettings parses DPML_NCCL_POLICY (empty: auto) and takes
// DPML_NCCL_TABLE as given.
func ParseSettings(policy, table string) (Settings, error) {
	s := Settings{Table: strings.TrimSpace(table), Fixed: Native}
	switch p := strings.ToLower(strings.TrimSpace(policy)); p {
	case "", "auto":
		s.Mode = ModeAuto
	case "model":
		s.Mode = ModeModel
	case "off":
		s.Mode = ModeOff
	default:
		d, err := ParseDecision(p)
		if err != nil {
			return Settings{Mode: ModeOff, Fixed: Native}, fmt.Errorf("DPML_NCCL_POLICY=%q: want auto, model, off, C or C/ALGO/PROTO: %w", policy, err)
		}
		s.Mode, s.Fixed = ModeFixed, d
	}
	return s, nil
}

// Layout is a communicator as NCCL describes it to the tuner.
type Layout struct {
	Ranks, Nodes int
}

// PPN is the ranks per node a table entry of this layout names (the floor
// for uneven layouts, at least 1).
func (l Layout) PPN() int { return max(l.Ranks/max(l.Nodes, 1), 1) }

func (l Layout) String() string { return fmt.Sprintf("%dx%d", max(l.Nodes, 1), l.PPN()) }

// Bucket returns the size bucket of n bytes: floor(log2 n), 0 for 0 and 1
// (costmodel.MakeKey's; the C side computes the same with clz).
func Bucket(n uint64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(n) - 1
}

// Policy is a communicator's answers: one Decision per collective and
// size bucket, computed once at init, so a call is a lookup.
type Policy struct {
	Layout Layout
	// Source says where the answers come from, for the init log line.
	Source string
	choice [NumColls][NumBuckets]Decision
}

// Decide returns the answer for collective c on n bytes (Native for a
// collective out of range).
func (p *Policy) Decide(c Coll, n uint64) Decision {
	if c < 0 || c >= NumColls {
		return Native
	}
	return p.choice[c][Bucket(n)]
}

// Choice returns the answer for collective c and bucket b.
func (p *Policy) Choice(c Coll, b int) Decision {
	if c < 0 || c >= NumColls || b < 0 || b >= NumBuckets {
		return Native
	}
	return p.choice[c][b]
}

func (p *Policy) fill(d Decision) {
	for c := range p.choice {
		for b := range p.choice[c] {
			p.choice[c][b] = d
		}
	}
}

// fillModel answers every collective and bucket by the model's best
// candidate (channels only: NCCL's own cost model knows its algorithms and
// protocols better than this one).
func (p *Policy) fillModel(m *costmodel.Model, colls []Coll) {
	for _, c := range colls {
		for b := range p.choice[c] {
			ch, _ := BestChannels(m, c, bucketBytes(b), p.Layout, DefaultCandidates)
			p.choice[c][b] = Decision{Channels: ch, Algo: -1, Proto: -1}
		}
	}
}

var allColls = []Coll{Broadcast, Reduce, AllGather, ReduceScatter, AllReduce}

// New computes the policy of a communicator of layout lay. It always
// returns a usable policy: on an error (a table that does not read, or
// holds contradictory entries for this layout) every answer is Native and
// the error says why, so the plugin answers NCCL's default.
func New(s Settings, lay Layout) (*Policy, error) {
	p := &Policy{Layout: Layout{Ranks: max(lay.Ranks, 1), Nodes: max(lay.Nodes, 1)}}
	p.fill(Native)
	switch s.Mode {
	case ModeOff:
		p.Source = "off: NCCL's default for every call"
		return p, nil
	case ModeFixed:
		if err := s.Fixed.validate(); err != nil {
			p.Source = "off (bad fixed answer)"
			return p, err
		}
		p.fill(s.Fixed)
		p.Source = "fixed " + s.Fixed.String() + " for every call"
		return p, nil
	case ModeModel:
		m := DefaultModel()
		p.fillModel(&m, allColls)
		p.Source = "channel model (DefaultModel, not fitted to a machine)"
		return p, nil
	case ModeAuto:
	default:
		p.Source = "off (unknown mode)"
		return p, fmt.Errorf("nccl: unknown mode %d", int(s.Mode))
	}
	if s.Table == "" {
		m := Machine{GPUs: p.Layout.Ranks, Nodes: p.Layout.Nodes, GPU: s.GPU, Link: s.Link}
		b, ok, err := LookupBuiltin(m)
		switch {
		case err != nil:
			p.Source = "off (built-in data does not read)"
			return p, err
		case !ok:
			p.Source = fmt.Sprintf("no built-in data for %s and no DPML_NCCL_TABLE: NCCL's default for every call", m)
			return p, nil
		}
		p.fillBuiltin(b)
		p.Source = fmt.Sprintf("built-in data for %s (NCCL %s, %s; %s)", b.Key, b.Provenance.NCCL, orDash(b.Provenance.Date), b.Provenance.Machine)
		if b.Floor != nil {
			p.Source += fmt.Sprintf("; its channel floor, %d, applies where the library is preloaded", b.Floor.Channels)
		}
		return p, nil
	}
	tb, err := loadTable(s.Table)
	if err != nil {
		p.Source = "off (DPML_NCCL_TABLE does not read)"
		return p, fmt.Errorf("DPML_NCCL_TABLE=%s: %w", s.Table, err)
	}
	covered, err := p.fillTable(tb)
	if err != nil {
		p.fill(Native)
		p.Source = "off (DPML_NCCL_TABLE is inconsistent)"
		return p, fmt.Errorf("DPML_NCCL_TABLE=%s: %w", s.Table, err)
	}
	var rest []Coll
	for _, c := range allColls {
		if !covered[c] {
			rest = append(rest, c)
		}
	}
	src := fmt.Sprintf("table %s (%s, %s)", s.Table, orDash(tb.Provenance.MPI), orDash(tb.Provenance.Date))
	var names []string
	for _, c := range allColls {
		if covered[c] {
			names = append(names, c.String())
		}
	}
	if len(names) == 0 {
		src += ": no entries for layout " + p.Layout.String()
	} else {
		src += ": " + strings.Join(names, ",") + " for layout " + p.Layout.String()
	}
	if len(rest) > 0 {
		if tb.Model != nil {
			p.fillModel(tb.Model, rest)
			src += "; the table's model for the rest"
		} else {
			src += "; NCCL's default for the rest"
		}
	}
	p.Source = src
	return p, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// EntryDecision returns the answer a table entry names.
func EntryDecision(en *costmodel.Entry) (Decision, error) {
	d := Decision{Algo: -1, Proto: -1}
	switch strings.ToLower(en.Variant) {
	case "native":
	case "dpml":
		d.Channels = en.Leaders
		if d.Channels < 1 {
			return Native, fmt.Errorf("nccl: entry %s 2^%d: %d channels", en.Coll, en.Log2Bytes, en.Leaders)
		}
	default:
		return Native, fmt.Errorf("nccl: entry %s 2^%d: variant %q: want dpml (leaders = channels) or native", en.Coll, en.Log2Bytes, en.Variant)
	}
	var err error
	if d.Algo, err = ParseAlgo(en.Algo); err != nil {
		return Native, err
	}
	if d.Proto, err = ParseProto(en.Proto); err != nil {
		return Native, err
	}
	if err := d.validate(); err != nil {
		return Native, fmt.Errorf("entry %s 2^%d: %w", en.Coll, en.Log2Bytes, err)
	}
	return d, nil
}

// fillTable answers from tb's entries for p's layout. For each collective
// with entries, a bucket between two measured ones takes the nearer one's
// answer (the smaller on a tie), a bucket above the largest takes the
// largest's (the bandwidth regime does not change), and a bucket below the
// smallest stays Native (small calls are latency-bound, where NCCL's own
// choice is the safe one). Entries of other layouts, and entries without
// a collective (DPML's), are ignored; two entries of one bucket that
// disagree are an error (the plugin does not know the element type that
// may tell them apart).
func (p *Policy) fillTable(tb *costmodel.Table) (covered [NumColls]bool, err error) {
	var at [NumColls]map[int]Decision
	for i := range tb.Entries {
		en := &tb.Entries[i]
		if en.Coll == "" || en.Nodes != p.Layout.Nodes || en.PPN != p.Layout.PPN() {
			continue
		}
		c, err := ParseColl(en.Coll)
		if err != nil {
			return covered, err
		}
		if en.Log2Bytes < 0 || en.Log2Bytes >= NumBuckets {
			return covered, fmt.Errorf("nccl: entry %s: size bucket %d out of range", en.Coll, en.Log2Bytes)
		}
		d, err := EntryDecision(en)
		if err != nil {
			return covered, err
		}
		if at[c] == nil {
			at[c] = map[int]Decision{}
		}
		if old, ok := at[c][en.Log2Bytes]; ok && old != d {
			return covered, fmt.Errorf("nccl: entries for %s 2^%d on %s disagree: %s and %s", c, en.Log2Bytes, p.Layout, old, d)
		}
		at[c][en.Log2Bytes] = d
	}
	for c := range at {
		if len(at[c]) == 0 {
			continue
		}
		covered[c] = true
		bs := make([]int, 0, len(at[c]))
		for b := range at[c] {
			bs = append(bs, b)
		}
		sort.Ints(bs)
		for b := range p.choice[c] {
			switch {
			case b < bs[0]:
				p.choice[c][b] = Native
			case b >= bs[len(bs)-1]:
				p.choice[c][b] = at[c][bs[len(bs)-1]]
			default:
				j := sort.SearchInts(bs, b) // bs[j] >= b
				if bs[j] == b || bs[j]-b < b-bs[j-1] {
					p.choice[c][b] = at[c][bs[j]]
				} else {
					p.choice[c][b] = at[c][bs[j-1]]
				}
			}
		}
	}
	return covered, nil
}

// maxTableBytes bounds what the plugin reads: a table is a few hundred
// entries; a huge file named by mistake must not stall communicator init.
const maxTableBytes = 16 << 20

// tableCache keeps the tables read, by path, while the file's size and
// modification time stay the same: a program that creates many
// communicators reads its table once.
var tableCache struct {
	sync.Mutex
	m map[string]cachedTable
}

type cachedTable struct {
	size  int64
	mtime time.Time
	tb    *costmodel.Table
	err   error
}

var errTooLarge = errors.New("larger than 16 MiB: not a tuning table")

// loadTable reads and checks a table (cached; see tableCache). Policies
// only read the table, so sharing it is safe.
func loadTable(path string) (*costmodel.Table, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	tableCache.Lock()
	defer tableCache.Unlock()
	if c, ok := tableCache.m[path]; ok && c.size == st.Size() && c.mtime.Equal(st.ModTime()) {
		return c.tb, c.err
	}
	var tb *costmodel.Table
	if st.Size() > maxTableBytes {
		err = errTooLarge
	} else {
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			tb, err = costmodel.ReadTable(bytes.NewReader(b))
		}
	}
	if tableCache.m == nil {
		tableCache.m = map[string]cachedTable{}
	}
	tableCache.m[path] = cachedTable{size: st.Size(), mtime: st.ModTime(), tb: tb, err: err}
	return tb, err
}
