package dpml

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/runtime/dropinhook"
	"github.com/dpmlgo/dpml/mpi"
)

// Sentinel errors of setup and of the debug check. Errors that Agree
// returns carry the same text on every rank and wrap these.
var (
	// ErrConfig: a setting (environment variable or option) is invalid on
	// some rank.
	ErrConfig = errors.New("dpml: invalid setting")
	// ErrMismatch: a setting that must be equal on all ranks differs.
	ErrMismatch = errors.New("dpml: settings differ between ranks")
	// ErrSetup: building the communicator failed on some rank.
	ErrSetup = errors.New("dpml: setup failed")
	// ErrCheck: DPML_CHECK found a call whose arguments differ between
	// ranks (count, type, op, in-place use, forced plan).
	ErrCheck = errors.New("dpml: DPML_CHECK: the ranks called allreduce with different arguments")
)

// Setting is one named value that must be equal on all ranks.
type Setting struct{ Name, Value string }

// Failure classes exchanged by Agree (the max over ranks wins the
// sentinel; every class present is named in the message).
const (
	classOK uint64 = iota
	classSetup
	classConfig
	classCheck
)

func classOf(err error) uint64 {
	switch {
	case err == nil:
		return classOK
	case errors.Is(err, config.ErrInvalid), errors.Is(err, ErrConfig):
		return classConfig
	}
	return classSetup
}

// Agree is collective over c. Every rank passes its own local error (nil
// when it has none) and the same list of settings (same names, same order;
// the values are this rank's). When no rank has an error and every setting
// is equal everywhere, Agree returns nil on every rank, after one
// allreduce of 16 bytes per setting. Otherwise it returns on every rank an
// error with the same text, naming each setting that differs with the
// values seen on which ranks, and each rank's error: a configuration error
// on any rank becomes the same clear error on all, and no rank is left
// waiting in a collective the others skipped. The error wraps ErrMismatch,
// ErrConfig or ErrSetup as they apply, and also, on the rank where it
// happened, the local error itself.
//
// Its collectives are bounded by DPML_TIMEOUT like the engine's own
// (package doc, watchdog.go): a rank that never comes to the agreement
// ends the job with a message naming the step, instead of leaving the
// others waiting forever.
func Agree(c *mpi.Comm, local error, settings []Setting) error {
	if c == nil {
		return nilCommError("Agree")
	}
	if w := watchAgreement(c); w != nil {
		w.watch.enter(stepAgree)
		defer w.stopWatch()
	}
	return agree(c, local, settings)
}

// watchAgreement registers a stand-in Comm for c with the watchdog for the
// time of one agreement (New's own agreements run inside its watched
// setup step and call agree directly); nil when DPML_TIMEOUT is negative
// (wait forever).
func watchAgreement(c *mpi.Comm) *Comm {
	timeout, _ := config.Duration(config.Timeout) // a bad value fails the agreement itself; 0: startWatch's default
	if timeout < 0 {
		return nil
	}
	g := &Comm{parent: c}
	g.rank, g.size = c.Rank(), c.Size()
	g.wait.Timeout = timeout
	g.startWatch()
	return g
}

// agree is Agree without a watch of its own.
func agree(c *mpi.Comm, local error, settings []Setting) error {
	n := len(settings)
	buf := make([]uint64, 1+2*n)
	buf[0] = classOf(local)
	for i, s := range settings {
		h := hashString(s.Value)
		buf[1+i], buf[1+n+i] = h, ^h // max of h and of ^h: max and min
	}
	if err := mpi.AllreduceInPlace(c, buf, mpi.OpMax); err != nil {
		return errors.Join(fmt.Errorf("%w: agree: %w", ErrSetup, err), local)
	}
	var diff []int
	for i := range settings {
		if buf[1+i] != ^buf[1+n+i] {
			diff = append(diff, i)
		}
	}
	if buf[0] == classOK && len(diff) == 0 {
		return nil
	}
	return disagreement(c, local, classOf(local), settings, diff, ErrSetup)
}

// disagreement is the slow path of Agree and of the debug check, taken by
// every rank of c alike (each knows from the same reduction that something
// is wrong): it gathers every rank's error text and its values of the
// settings that differ, and builds the same message on every rank.
func disagreement(c *mpi.Comm, local error, localClass uint64, settings []Setting, diff []int, base error) error {
	const errMax, valMax = 480, 120
	rec := 1 + 2 + errMax + len(diff)*(2+valMax)
	mine := make([]uint8, rec)
	mine[0] = uint8(localClass)
	off := 1
	put := func(s string, max int) {
		if len(s) > max {
			s = s[:max-3] + "..."
		}
		binary.LittleEndian.PutUint16(mine[off:], uint16(len(s)))
		copy(mine[off+2:], s)
		off += 2 + max
	}
	if local != nil {
		// The sentinel is named once, at the head of the message.
		text := local.Error()
		for _, s := range []error{ErrConfig, ErrSetup} {
			text = strings.TrimPrefix(text, s.Error()+": ")
		}
		put(strings.ReplaceAll(text, "\n", "; "), errMax)
	} else {
		put("", errMax)
	}
	for _, i := range diff {
		put(settings[i].Value, valMax)
	}
	all := make([]uint8, rec*c.Size())
	if err := mpi.Allgather(c, mine, all); err != nil {
		return errors.Join(fmt.Errorf("%w: gather the ranks' errors: %w", ErrSetup, err), local)
	}
	type rankRec struct {
		class  uint64
		err    string
		values []string
	}
	ranks := make([]rankRec, c.Size())
	for r := range ranks {
		b := all[r*rec : (r+1)*rec]
		off := 1
		get := func(max int) string {
			l := min(int(binary.LittleEndian.Uint16(b[off:])), max)
			s := string(b[off+2 : off+2+l])
			off += 2 + max
			return s
		}
		ranks[r].class = uint64(b[0])
		ranks[r].err = get(errMax)
		for range diff {
			ranks[r].values = append(ranks[r].values, get(valMax))
		}
	}

	var parts []string
	var wrapped []error
	for j, i := range diff {
		groups := groupRanks(len(ranks), func(r int) string { return ranks[r].values[j] })
		var seen []string
		for _, g := range groups {
			seen = append(seen, fmt.Sprintf("%q on %s", g.key, g.ranks))
		}
		parts = append(parts, fmt.Sprintf("%s differs between ranks: %s", settings[i].Name, strings.Join(seen, ", ")))
	}
	if len(diff) > 0 {
		if base == ErrCheck {
			wrapped = append(wrapped, ErrCheck)
		} else {
			wrapped = append(wrapped, ErrMismatch)
		}
	}
	worst := classOK
	for _, g := range groupRanks(len(ranks), func(r int) string { return ranks[r].err }) {
		if g.key == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s", g.ranks, g.key))
	}
	for _, r := range ranks {
		worst = max(worst, r.class)
	}
	switch worst {
	case classConfig:
		wrapped = append(wrapped, ErrConfig)
	case classSetup:
		wrapped = append(wrapped, ErrSetup)
	case classCheck:
		wrapped = append(wrapped, ErrCheck)
	}
	if len(wrapped) == 0 {
		wrapped = append(wrapped, base)
	}
	msg := wrapped[0].Error() + ": " + strings.Join(parts, "; ")
	if local != nil {
		wrapped = append(wrapped, local)
	}
	return &agreedError{msg: msg, errs: wrapped}
}

// agreedError has the same text on every rank; it unwraps to the
// sentinels that apply and to this rank's own error.
type agreedError struct {
	msg  string
	errs []error
}

func (e *agreedError) Error() string   { return e.msg }
func (e *agreedError) Unwrap() []error { return e.errs }

type rankGroup struct {
	key   string
	ranks string // "rank 2", "ranks 0-1", "ranks 0,2-3"
}

// groupRanks groups ranks 0..n-1 by key(r), in order of first appearance.
func groupRanks(n int, key func(int) string) []rankGroup {
	var order []string
	members := map[string][]int{}
	for r := range n {
		k := key(r)
		if _, ok := members[k]; !ok {
			order = append(order, k)
		}
		members[k] = append(members[k], r)
	}
	out := make([]rankGroup, len(order))
	for i, k := range order {
		out[i] = rankGroup{key: k, ranks: formatRanks(members[k])}
	}
	return out
}

// formatRanks writes sorted ranks as "rank 3" or "ranks 0-1,4".
func formatRanks(rs []int) string {
	var b strings.Builder
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(rs[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(rs[j]))
		}
		i = j + 1
	}
	if len(rs) == 1 {
		return "rank " + b.String()
	}
	return "ranks " + b.String()
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func init() {
	dropinhook.AgreeDropin = func(c any, local error) error {
		s, _ := settingsOf(config.AtDropin) // a value that does not parse differs from the parsed ones
		return Agree(c.(*mpi.Comm), local, s)
	}
}

// settingsOf returns the settings compared at stage a (config.Compared),
// each with its canonical value on this rank, and the errors of those that
// do not parse (their value is then as written).
func settingsOf(a config.Agreement) ([]Setting, error) {
	var out []Setting
	var errs []error
	for _, name := range config.Compared(a) {
		v, err := config.Canonical(name)
		errs = append(errs, err)
		out = append(out, Setting{Name: name, Value: v})
	}
	return out, errors.Join(errs...)
}
