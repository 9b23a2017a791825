package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors: every error of this package wraps one of them.
var (
	// ErrUndeclared: a name missing from Vars was read (a bug in the caller).
	ErrUndeclared = errors.New("config: variable not declared in config.Vars")
	// ErrInvalid: a value does not parse, or lies outside its range.
	ErrInvalid = errors.New("config: invalid value")
)

// Byte-size units: binary multiples, each with optional "B" or "iB"
// (case-insensitive): 64K = 64KB = 64KiB = 65536.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30},
	{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseBytes parses a byte count: a decimal integer with an optional binary
// unit K, M or G (also KB/KiB, MB/MiB, GB/GiB, case-insensitive; all
// powers of 1024) or B, spaces allowed around the number. It is the one
// byte-size parser of DPML-Go (the engine's settings, dpmlbench's -sizes).
// A value that does not fit in an int64 is an error, never a wrapped
// number.
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	// Digits only: no sign, no "0x", no "1_000" (ParseUint base 10 takes
	// none of them).
	v, err := strconv.ParseUint(t, 10, 63)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("%w: %q: larger than %d bytes", ErrInvalid, s, int64(math.MaxInt64))
		}
		return 0, fmt.Errorf("%w: %q is not a byte count (want e.g. 4096, 64K, 4MiB, 1G)", ErrInvalid, s)
	}
	if v > uint64(math.MaxInt64/mult) {
		return 0, fmt.Errorf("%w: %q: larger than %d bytes", ErrInvalid, s, int64(math.MaxInt64))
	}
	return int64(v) * mult, nil
}

// MaxDuration bounds a duration setting: about 11.4 days, far beyond any
// sensible timeout, and far from time.Duration's overflow.
const MaxDuration = 1e15 * time.Nanosecond

// ParseDuration parses a duration: Go syntax ("60s", "500ms", "1m30s") or
// a bare number of seconds ("1.5"). NaN, infinities, values beyond
// ±MaxDuration and non-zero values that round to zero nanoseconds are
// errors, never a wrapped or silently zero duration.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(t, 64); err == nil || isRangeErr(err) {
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return 0, fmt.Errorf("%w: %q is not a finite duration", ErrInvalid, s)
		case math.Abs(f) > MaxDuration.Seconds():
			return 0, fmt.Errorf("%w: %q: longer than %v", ErrInvalid, s, MaxDuration)
		}
		ns := math.Round(f * 1e9)
		if ns == 0 && f != 0 {
			return 0, fmt.Errorf("%w: %q rounds to 0 ns", ErrInvalid, s)
		}
		return time.Duration(ns), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a duration (want e.g. 60s, 500ms, or seconds: 1.5)", ErrInvalid, s)
	}
	if d > MaxDuration || d < -MaxDuration {
		return 0, fmt.Errorf("%w: %q: longer than %v", ErrInvalid, s, MaxDuration)
	}
	return d, nil
}

func isRangeErr(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange)
}

// ParseBool parses 1/0, true/false, yes/no, on/off (case-insensitive).
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%w: %q is not a boolean (want 1/0, true/false, yes/no, on/off)", ErrInvalid, s)
}

// ParseInt parses a decimal int64 (optional sign, no other syntax).
func ParseInt(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		if isRangeErr(err) {
			return 0, fmt.Errorf("%w: %q: out of the int64 range", ErrInvalid, s)
		}
		return 0, fmt.Errorf("%w: %q is not an integer", ErrInvalid, s)
	}
	return n, nil
}

// Value is a parsed setting. Exactly one of the fields is meaningful,
// depending on the variable's Kind, unless Keyword is set: then the value
// was one of the variable's keywords (auto, off, ...).
type Value struct {
	Keyword string        // a keyword of Var.Values (lower case), or ""
	Int     int64         // KindInt, KindBytes
	Dur     time.Duration // KindDuration
	Bool    bool          // KindBool
	Str     string        // KindString
}

// Parse parses s as a value of v: a keyword of v.Values (any case), or
// a value of v's Kind within v's range. It is the single parser behind
// every typed getter of this package.
func (v Var) Parse(s string) (Value, error) {
	t := strings.TrimSpace(s)
	for _, kw := range v.Values {
		if strings.EqualFold(t, kw) {
			return Value{Keyword: kw}, nil
		}
	}
	var val Value
	var err error
	switch v.Kind {
	case KindEnum:
		return Value{}, fmt.Errorf("%w: %s=%q: want %s", ErrInvalid, v.Name, s, orList(v.Values))
	case KindString:
		return Value{Str: t}, nil
	case KindBool:
		val.Bool, err = ParseBool(t)
	case KindInt:
		val.Int, err = ParseInt(t)
	case KindBytes:
		val.Int, err = ParseBytes(t)
	case KindDuration:
		val.Dur, err = ParseDuration(t)
	default:
		return Value{}, fmt.Errorf("%w: %s has unknown kind %d", ErrInvalid, v.Name, int(v.Kind))
	}
	if err != nil {
		return Value{}, fmt.Errorf("%s: %w%s", v.Name, err, v.alsoKeywords())
	}
	if err := v.inRange(val); err != nil {
		return Value{}, err
	}
	return val, nil
}

// alsoKeywords is ", or auto" style advice for a number that failed.
func (v Var) alsoKeywords() string {
	if len(v.Values) == 0 {
		return ""
	}
	return " (or " + orList(v.Values) + ")"
}

func (v Var) inRange(val Value) error {
	if val.Keyword != "" || v.Min == 0 && v.Max == 0 {
		return nil
	}
	var n int64
	switch v.Kind {
	case KindInt, KindBytes:
		n = val.Int
	case KindDuration:
		n = int64(val.Dur)
	default:
		return nil
	}
	if n < v.Min || n > v.Max {
		return fmt.Errorf("%w: %s=%s: out of range %s%s", ErrInvalid, v.Name, v.format(n), v.RangeString(), v.alsoKeywords())
	}
	return nil
}

func (v Var) format(n int64) string {
	if v.Kind == KindDuration {
		return time.Duration(n).String()
	}
	return strconv.FormatInt(n, 10)
}

// RangeString is "[lo, hi]" of a bounded variable, in its own units.
func (v Var) RangeString() string {
	if v.Min == 0 && v.Max == 0 {
		return ""
	}
	if v.Kind == KindBytes {
		return "[" + FormatBytes(v.Min) + ", " + FormatBytes(v.Max) + "]"
	}
	return "[" + v.format(v.Min) + ", " + v.format(v.Max) + "]"
}

// Canonical is the value written the same way on every rank, whatever
// spelling was used ("64K" and "65536" are both "65536"): what the engine
// compares across ranks.
func (v Var) Canonical(val Value) string {
	if val.Keyword != "" {
		return val.Keyword
	}
	switch v.Kind {
	case KindInt, KindBytes:
		return strconv.FormatInt(val.Int, 10)
	case KindDuration:
		return val.Dur.String()
	case KindBool:
		return strconv.FormatBool(val.Bool)
	}
	return val.Str
}

// FormatBytes writes n with the largest binary unit that divides it
// (64K, 1M, 3G, 1536), so FormatBytes and ParseBytes round-trip.
func FormatBytes(n int64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

func orList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = w
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
