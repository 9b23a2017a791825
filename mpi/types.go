package mpi

// #include "dpml_mpi.h"
import "C"

import (
	"reflect"
	"unsafe"
)

// Number is every fixed-size numeric Go kind, named types included. Each maps
// to the exact MPI datatype, so MPI does the arithmetic on the right type.
// Platform-sized int, uint and uintptr are left out on purpose: convert to
// int64/uint64 (same layout on 64-bit) so both ends agree on the width.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Kind is the element kind of a Number type.
//
// The Kind and Op tables here are the one definition of their numbering:
// the C side (dpml_kinds.h here and in dropin/) is generated from them.
//
//go:generate go run ./internal/kindgen -mpi dpml_kinds.h -dropin ../dropin/dpml_kinds.h
type Kind int

const (
	KindInt8 Kind = iota
	KindInt16
	KindInt32
	KindInt64
	KindUint8
	KindUint16
	KindUint32
	KindUint64
	KindFloat32
	KindFloat64
	KindComplex64
	KindComplex128
	numKinds
)

var kindNames = [numKinds]string{"int8", "int16", "int32", "int64",
	"uint8", "uint16", "uint32", "uint64",
	"float32", "float64", "complex64", "complex128"}

var kindSizes = [numKinds]int{1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16}

// kindDatatypes names the MPI datatype of each kind (DatatypeOf).
var kindDatatypes = [numKinds]string{"MPI_INT8_T", "MPI_INT16_T", "MPI_INT32_T", "MPI_INT64_T",
	"MPI_UINT8_T", "MPI_UINT16_T", "MPI_UINT32_T", "MPI_UINT64_T",
	"MPI_FLOAT", "MPI_DOUBLE", "MPI_C_FLOAT_COMPLEX", "MPI_C_DOUBLE_COMPLEX"}

// Kinds lists every Kind, in order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "Kind(?)"
	}
	return kindNames[k]
}

// Size is the element size in bytes (0 for an invalid Kind).
func (k Kind) Size() int {
	if k < 0 || k >= numKinds {
		return 0
	}
	return kindSizes[k]
}

// DatatypeName is the name of k's MPI datatype ("MPI_INT8_T", "MPI_DOUBLE",
// ...; empty for an invalid Kind).
func (k Kind) DatatypeName() string {
	if k < 0 || k >= numKinds {
		return ""
	}
	return kindDatatypes[k]
}

// IsInteger reports whether k is a signed or unsigned integer kind.
func (k Kind) IsInteger() bool { return k >= KindInt8 && k <= KindUint64 }

// IsFloat reports whether k is float32 or float64.
func (k Kind) IsFloat() bool { return k == KindFloat32 || k == KindFloat64 }

// IsComplex reports whether k is complex64 or complex128.
func (k Kind) IsComplex() bool { return k == KindComplex64 || k == KindComplex128 }

// KindOf returns the Kind of T. The type switch covers unnamed types without
// reflection or allocation; named types (type Celsius float64) fall back to
// reflect.Kind, which is also allocation-free.
func KindOf[T Number]() Kind {
	switch any(*new(T)).(type) {
	case float64:
		return KindFloat64
	case float32:
		return KindFloat32
	case int64:
		return KindInt64
	case int32:
		return KindInt32
	case uint64:
		return KindUint64
	case uint32:
		return KindUint32
	case uint8:
		return KindUint8
	case int8:
		return KindInt8
	case int16:
		return KindInt16
	case uint16:
		return KindUint16
	case complex64:
		return KindComplex64
	case complex128:
		return KindComplex128
	}
	return kindOfReflect(reflect.TypeFor[T]().Kind())
}

func kindOfReflect(k reflect.Kind) Kind {
	switch k {
	case reflect.Int8:
		return KindInt8
	case reflect.Int16:
		return KindInt16
	case reflect.Int32:
		return KindInt32
	case reflect.Int64:
		return KindInt64
	case reflect.Uint8:
		return KindUint8
	case reflect.Uint16:
		return KindUint16
	case reflect.Uint32:
		return KindUint32
	case reflect.Uint64:
		return KindUint64
	case reflect.Float32:
		return KindFloat32
	case reflect.Float64:
		return KindFloat64
	case reflect.Complex64:
		return KindComplex64
	case reflect.Complex128:
		return KindComplex128
	}
	panic("mpi: unreachable: Number with kind " + k.String())
}

// Datatype is a predefined MPI datatype handle.
type Datatype struct{ h C.MPI_Datatype }

// DatatypeOf returns the MPI datatype used for T (MPI_INT32_T, MPI_DOUBLE,
// MPI_C_DOUBLE_COMPLEX, ...).
func DatatypeOf[T Number]() Datatype { return Datatype{handles.dt[KindOf[T]()]} }

// Handle returns the C MPI_Datatype as an integer (see Comm.Handle).
func (d Datatype) Handle() uintptr { return uintptr(C.dpml_datatype_to_uintptr(d.h)) }

// handles caches the predefined handles; they are constants of the library,
// valid before MPI_Init.
var handles C.dpml_handles

// hx holds the same datatypes and ops as the integers the blocking calls
// take (dpml_mpi.h, DPML_DT and DPML_OP; package doc, "The call's cost").
var hx struct {
	dt [C.DPML_NKINDS]C.uintptr_t
	op [C.DPML_NOPS]C.uintptr_t
}

func init() {
	C.dpml_get_handles(&handles)
	for i, h := range handles.dt {
		hx.dt[i] = C.dpml_datatype_to_uintptr(h)
	}
	for i, h := range handles.op {
		hx.op[i] = C.dpml_op_to_uintptr(h)
	}
}

// bufPtr returns the address of s's first element, or nil for an empty
// slice: the data pointer of an empty slice may point past its array into an
// unrelated object, which must not be handed to C.
func bufPtr[T Number](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// cbuf is bufPtr as the blocking calls take it (dpml_mpi.h): a char
// pointer, which cgo does not check on each call as it does an
// unsafe.Pointer (package doc, "The call's cost"). It stays a pointer, so
// the collector keeps s alive during the call and a stack that moves
// takes it along; T holds no pointers, which is all cgo's check would
// have verified.
func cbuf[T Number](s []T) *C.char {
	if len(s) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(unsafe.SliceData(s)))
}

// overlap reports whether the memory of a and b intersects.
func overlap[T Number](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	sz := unsafe.Sizeof(a[0])
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b))*sz && b0 < a0+uintptr(len(a))*sz
}
