package mpi

import (
	"fmt"
	"strings"
)

// Op is a predefined reduction operation. The zero value is OpSum.
type Op int

// The C side numbers ops from this table too (see Kind).
const (
	OpSum  Op = iota // MPI_SUM: all kinds
	OpProd           // MPI_PROD: all kinds
	OpMin            // MPI_MIN: integers and floats
	OpMax            // MPI_MAX: integers and floats
	OpLand           // MPI_LAND: integers
	OpLor            // MPI_LOR: integers
	OpLxor           // MPI_LXOR: integers
	OpBand           // MPI_BAND: integers
	OpBor            // MPI_BOR: integers
	OpBxor           // MPI_BXOR: integers
	numOps
)

var opNames = [numOps]string{"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor"}

// Ops lists every Op, in order.
func Ops() []Op {
	ops := make([]Op, numOps)
	for i := range ops {
		ops[i] = Op(i)
	}
	return ops
}

// String returns the lower-case short name ("sum", "max", ...) that ParseOp
// accepts.
func (o Op) String() string {
	if o < 0 || o >= numOps {
		return fmt.Sprintf("Op(%d)", int(o))
	}
	return opNames[o]
}

// MPIName is the name of the MPI op ("MPI_SUM", ...; empty for an invalid
// Op).
func (o Op) MPIName() string {
	if o < 0 || o >= numOps {
		return ""
	}
	return "MPI_" + strings.ToUpper(opNames[o])
}

// ParseOp parses an op name, case-insensitively, with or without an "MPI_"
// prefix: "sum", "MAX", "MPI_BXOR".
func ParseOp(s string) (Op, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimPrefix(t, "mpi_")
	for i, n := range opNames {
		if t == n {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown op %q (want one of %s)", ErrOp, s, strings.Join(opNames[:], ", "))
}

// Set implements flag.Value, so an Op can be a command-line flag.
func (o *Op) Set(s string) error {
	v, err := ParseOp(s)
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Op) UnmarshalText(b []byte) error { return o.Set(string(b)) }

// MarshalText implements encoding.TextMarshaler.
func (o Op) MarshalText() ([]byte, error) {
	if o < 0 || o >= numOps {
		return nil, fmt.Errorf("%w: %v", ErrOp, o)
	}
	return []byte(o.String()), nil
}

// OpValidFor reports whether the MPI standard allows op on elements of kind k:
// sum and prod on every kind, min and max not on complex, logical and bitwise
// ops only on integers.
func OpValidFor(op Op, k Kind) bool {
	if k < 0 || k >= numKinds {
		return false
	}
	switch op {
	case OpSum, OpProd:
		return true
	case OpMin, OpMax:
		return !k.IsComplex()
	case OpLand, OpLor, OpLxor, OpBand, OpBor, OpBxor:
		return k.IsInteger()
	}
	return false
}

// CheckOp returns an error wrapping ErrOp if op is not valid for T, without
// calling MPI (an invalid op would otherwise be an MPI error or an abort).
func CheckOp[T Number](op Op) error {
	if k := KindOf[T](); !OpValidFor(op, k) {
		return opError("CheckOp", op, k)
	}
	return nil
}

func opError(fn string, op Op, k Kind) error {
	if op < 0 || op >= numOps {
		return fmt.Errorf("%w: %s: %v is not an op", ErrOp, fn, op)
	}
	return fmt.Errorf("%w: %s: %v is not defined for %v", ErrOp, fn, op, k)
}
