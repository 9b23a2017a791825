package bench

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"
)

// Real is the set of element types dpmlbench sweeps over (-type). It is a
// subset of mpi.Number, so a T constrained by Real can be handed to the
// mpi and dpml generics.
type Real interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Ops lists the -op names, in the order of mpi.Op.
var Ops = []string{"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor"}

// Types lists the -type names.
var Types = []string{"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"}

// ParseOp validates and normalizes an -op name.
func ParseOp(s string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, o := range Ops {
		if t == o {
			return o, nil
		}
	}
	return "", fmt.Errorf("op %q: want one of %s", s, strings.Join(Ops, ", "))
}

// ParseType validates and normalizes a -type name (also accepts float,
// double, int, byte as aliases).
func ParseType(s string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "float":
		t = "float32"
	case "double":
		t = "float64"
	case "int":
		t = "int32"
	case "byte", "char":
		t = "uint8"
	}
	for _, x := range Types {
		if t == x {
			return x, nil
		}
	}
	return "", fmt.Errorf("type %q: want one of %s", s, strings.Join(Types, ", "))
}

// ExactValue returns the input value of element i (a global index in the
// rank's send arena) on rank for reduction op. The values are small
// non-negative integers chosen so that the reduction is exact in every
// element type and therefore independent of the reduction order and
// association: sums of values < 8 stay far below 2^24 for any realistic
// rank count, products use only 1 and 2 (powers of two are exact until the
// true product overflows, and then every order overflows), and integer
// overflow wraps identically in any order. Hence any correct allreduce plan
// must produce a result bitwise identical to the native one.
func ExactValue(op string, rank, i int) int {
	h := uint32(i)*2654435761 ^ uint32(rank+1)*2246822519
	h ^= h >> 15
	h *= 2654435761
	h ^= h >> 13
	switch op {
	case "prod":
		if h%16 == 0 {
			return 2
		}
		return 1
	case "land", "lor", "lxor":
		return int(h % 3)
	case "sum":
		return int(h % 8)
	default: // min, max, band, bor, bxor
		return int(h % 64)
	}
}

// Fill sets buf[j] = ExactValue(op, rank, offset+j).
func Fill[T Real](buf []T, op string, rank, offset int) {
	for j := range buf {
		buf[j] = T(ExactValue(op, rank, offset+j))
	}
}

// Poison sets every byte of buf to 0xFF (NaN for floats, -1 or the maximum
// for integers), a value a correct result of ExactValue inputs practically
// never has, so a call that leaves its output untouched is caught.
func Poison[T Real](buf []T) {
	b := Bytes(buf)
	if len(b) == 0 {
		return
	}
	b[0] = 0xFF
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// Bytes is the byte view of a slice (no copy).
func Bytes[T Real](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Mismatch describes a bitwise difference between a result and the
// reference.
type Mismatch struct {
	Count int    // number of differing elements
	First int    // index of the first one
	Got   string // its value in the result
	Want  string // its value in the reference
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%d elements differ, first at index %d: got %s, want %s", m.Count, m.First, m.Got, m.Want)
}

// Compare compares got and want bitwise. It returns nil when they are
// identical, and a description of the differences otherwise. A length
// difference counts as a mismatch of the extra elements.
func Compare[T Real](got, want []T) *Mismatch {
	if len(got) == len(want) && bytes.Equal(Bytes(got), Bytes(want)) {
		return nil
	}
	n := min(len(got), len(want))
	m := &Mismatch{First: -1}
	es := 0
	if n > 0 {
		es = int(unsafe.Sizeof(got[0]))
	}
	gb, wb := Bytes(got[:n]), Bytes(want[:n])
	for i := 0; i < n; i++ {
		if !bytes.Equal(gb[i*es:(i+1)*es], wb[i*es:(i+1)*es]) {
			if m.First < 0 {
				m.First = i
				m.Got = fmt.Sprint(got[i])
				m.Want = fmt.Sprint(want[i])
			}
			m.Count++
		}
	}
	if d := len(got) - len(want); d != 0 {
		if m.First < 0 {
			m.First = n
			m.Got = fmt.Sprintf("len %d", len(got))
			m.Want = fmt.Sprintf("len %d", len(want))
		}
		m.Count += max(d, -d)
	}
	return m
}
