package main

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"

	"github.com/dpmlgo/dpml/mpi"
)

// The -type switch: one instantiation of the generic sweep per element type.

func sweepType(env *runEnv) ([]results.Result, error) {
	switch env.cfg.typ {
	case "int8":
		return sweep[int8](env)
	case "int16":
		return sweep[int16](env)
	case "int32":
		return sweep[int32](env)
	case "int64":
		return sweep[int64](env)
	case "uint8":
		return sweep[uint8](env)
	case "uint16":
		return sweep[uint16](env)
	case "uint32":
		return sweep[uint32](env)
	case "uint64":
		return sweep[uint64](env)
	case "float32":
		return sweep[float32](env)
	case "float64":
		return sweep[float64](env)
	}
	return nil, fmt.Errorf("unsupported type %q", env.cfg.typ)
}

func checkOpForType(typ string, op mpi.Op) error {
	switch typ {
	case "int8":
		return mpi.CheckOp[int8](op)
	case "int16":
		return mpi.CheckOp[int16](op)
	case "int32":
		return mpi.CheckOp[int32](op)
	case "int64":
		return mpi.CheckOp[int64](op)
	case "uint8":
		return mpi.CheckOp[uint8](op)
	case "uint16":
		return mpi.CheckOp[uint16](op)
	case "uint32":
		return mpi.CheckOp[uint32](op)
	case "uint64":
		return mpi.CheckOp[uint64](op)
	case "float32":
		return mpi.CheckOp[float32](op)
	case "float64":
		return mpi.CheckOp[float64](op)
	}
	return fmt.Errorf("unsupported type %q", typ)
}

func elemSize(typ string) int {
	switch typ {
	case "int8", "uint8":
		return 1
	case "int16", "uint16":
		return 2
	case "int32", "uint32", "float32":
		return 4
	}
	return 8
}
