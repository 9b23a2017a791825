// The typed methods: one block per empi suffix, all alike.

package empicompat

// SendF64 sends vals to toProc with tag (blocking).
func (cm *Comm) SendF64(toProc, tag int, vals []float64) error {
	return send(cm, toProc, tag, vals, "SendF64")
}

// RecvF64 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvF64(fmProc, tag int, vals []float64) error {
	return recv(cm, fmProc, tag, vals, "RecvF64")
}

// BcastF64 copies vals from fmProc to every process.
func (cm *Comm) BcastF64(fmProc int, vals []float64) error {
	return bcast(cm, fmProc, vals, "BcastF64")
}

// ReduceF64 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceF64(toProc int, op Op, dest, orig []float64) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceF64")
}

// AllReduceF64 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceF64(op Op, dest, orig []float64) error {
	return allReduce(cm, op, dest, orig, "AllReduceF64")
}

// AllGatherF64 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherF64(dest, orig []float64) error {
	return allGather(cm, dest, orig, "AllGatherF64")
}

// SendF32 sends vals to toProc with tag (blocking).
func (cm *Comm) SendF32(toProc, tag int, vals []float32) error {
	return send(cm, toProc, tag, vals, "SendF32")
}

// RecvF32 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvF32(fmProc, tag int, vals []float32) error {
	return recv(cm, fmProc, tag, vals, "RecvF32")
}

// BcastF32 copies vals from fmProc to every process.
func (cm *Comm) BcastF32(fmProc int, vals []float32) error {
	return bcast(cm, fmProc, vals, "BcastF32")
}

// ReduceF32 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceF32(toProc int, op Op, dest, orig []float32) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceF32")
}

// AllReduceF32 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceF32(op Op, dest, orig []float32) error {
	return allReduce(cm, op, dest, orig, "AllReduceF32")
}

// AllGatherF32 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherF32(dest, orig []float32) error {
	return allGather(cm, dest, orig, "AllGatherF32")
}

// SendI64 sends vals to toProc with tag (blocking).
func (cm *Comm) SendI64(toProc, tag int, vals []int64) error {
	return send(cm, toProc, tag, vals, "SendI64")
}

// RecvI64 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvI64(fmProc, tag int, vals []int64) error {
	return recv(cm, fmProc, tag, vals, "RecvI64")
}

// BcastI64 copies vals from fmProc to every process.
func (cm *Comm) BcastI64(fmProc int, vals []int64) error {
	return bcast(cm, fmProc, vals, "BcastI64")
}

// ReduceI64 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceI64(toProc int, op Op, dest, orig []int64) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceI64")
}

// AllReduceI64 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceI64(op Op, dest, orig []int64) error {
	return allReduce(cm, op, dest, orig, "AllReduceI64")
}

// AllGatherI64 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherI64(dest, orig []int64) error {
	return allGather(cm, dest, orig, "AllGatherI64")
}

// SendU64 sends vals to toProc with tag (blocking).
func (cm *Comm) SendU64(toProc, tag int, vals []uint64) error {
	return send(cm, toProc, tag, vals, "SendU64")
}

// RecvU64 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvU64(fmProc, tag int, vals []uint64) error {
	return recv(cm, fmProc, tag, vals, "RecvU64")
}

// BcastU64 copies vals from fmProc to every process.
func (cm *Comm) BcastU64(fmProc int, vals []uint64) error {
	return bcast(cm, fmProc, vals, "BcastU64")
}

// ReduceU64 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceU64(toProc int, op Op, dest, orig []uint64) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceU64")
}

// AllReduceU64 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceU64(op Op, dest, orig []uint64) error {
	return allReduce(cm, op, dest, orig, "AllReduceU64")
}

// AllGatherU64 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherU64(dest, orig []uint64) error {
	return allGather(cm, dest, orig, "AllGatherU64")
}

// SendI32 sends vals to toProc with tag (blocking).
func (cm *Comm) SendI32(toProc, tag int, vals []int32) error {
	return send(cm, toProc, tag, vals, "SendI32")
}

// RecvI32 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvI32(fmProc, tag int, vals []int32) error {
	return recv(cm, fmProc, tag, vals, "RecvI32")
}

// BcastI32 copies vals from fmProc to every process.
func (cm *Comm) BcastI32(fmProc int, vals []int32) error {
	return bcast(cm, fmProc, vals, "BcastI32")
}

// ReduceI32 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceI32(toProc int, op Op, dest, orig []int32) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceI32")
}

// AllReduceI32 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceI32(op Op, dest, orig []int32) error {
	return allReduce(cm, op, dest, orig, "AllReduceI32")
}

// AllGatherI32 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherI32(dest, orig []int32) error {
	return allGather(cm, dest, orig, "AllGatherI32")
}

// SendU32 sends vals to toProc with tag (blocking).
func (cm *Comm) SendU32(toProc, tag int, vals []uint32) error {
	return send(cm, toProc, tag, vals, "SendU32")
}

// RecvU32 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvU32(fmProc, tag int, vals []uint32) error {
	return recv(cm, fmProc, tag, vals, "RecvU32")
}

// BcastU32 copies vals from fmProc to every process.
func (cm *Comm) BcastU32(fmProc int, vals []uint32) error {
	return bcast(cm, fmProc, vals, "BcastU32")
}

// ReduceU32 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceU32(toProc int, op Op, dest, orig []uint32) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceU32")
}

// AllReduceU32 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceU32(op Op, dest, orig []uint32) error {
	return allReduce(cm, op, dest, orig, "AllReduceU32")
}

// AllGatherU32 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherU32(dest, orig []uint32) error {
	return allGather(cm, dest, orig, "AllGatherU32")
}

// SendI16 sends vals to toProc with tag (blocking).
func (cm *Comm) SendI16(toProc, tag int, vals []int16) error {
	return send(cm, toProc, tag, vals, "SendI16")
}

// RecvI16 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvI16(fmProc, tag int, vals []int16) error {
	return recv(cm, fmProc, tag, vals, "RecvI16")
}

// BcastI16 copies vals from fmProc to every process.
func (cm *Comm) BcastI16(fmProc int, vals []int16) error {
	return bcast(cm, fmProc, vals, "BcastI16")
}

// ReduceI16 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceI16(toProc int, op Op, dest, orig []int16) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceI16")
}

// AllReduceI16 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceI16(op Op, dest, orig []int16) error {
	return allReduce(cm, op, dest, orig, "AllReduceI16")
}

// AllGatherI16 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherI16(dest, orig []int16) error {
	return allGather(cm, dest, orig, "AllGatherI16")
}

// SendU16 sends vals to toProc with tag (blocking).
func (cm *Comm) SendU16(toProc, tag int, vals []uint16) error {
	return send(cm, toProc, tag, vals, "SendU16")
}

// RecvU16 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvU16(fmProc, tag int, vals []uint16) error {
	return recv(cm, fmProc, tag, vals, "RecvU16")
}

// BcastU16 copies vals from fmProc to every process.
func (cm *Comm) BcastU16(fmProc int, vals []uint16) error {
	return bcast(cm, fmProc, vals, "BcastU16")
}

// ReduceU16 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceU16(toProc int, op Op, dest, orig []uint16) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceU16")
}

// AllReduceU16 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceU16(op Op, dest, orig []uint16) error {
	return allReduce(cm, op, dest, orig, "AllReduceU16")
}

// AllGatherU16 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherU16(dest, orig []uint16) error {
	return allGather(cm, dest, orig, "AllGatherU16")
}

// SendI8 sends vals to toProc with tag (blocking).
func (cm *Comm) SendI8(toProc, tag int, vals []byte) error {
	return send(cm, toProc, tag, vals, "SendI8")
}

// RecvI8 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvI8(fmProc, tag int, vals []byte) error {
	return recv(cm, fmProc, tag, vals, "RecvI8")
}

// BcastI8 copies vals from fmProc to every process.
func (cm *Comm) BcastI8(fmProc int, vals []byte) error {
	return bcast(cm, fmProc, vals, "BcastI8")
}

// ReduceI8 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceI8(toProc int, op Op, dest, orig []byte) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceI8")
}

// AllReduceI8 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceI8(op Op, dest, orig []byte) error {
	return allReduce(cm, op, dest, orig, "AllReduceI8")
}

// AllGatherI8 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherI8(dest, orig []byte) error {
	return allGather(cm, dest, orig, "AllGatherI8")
}

// SendC128 sends vals to toProc with tag (blocking).
func (cm *Comm) SendC128(toProc, tag int, vals []complex128) error {
	return send(cm, toProc, tag, vals, "SendC128")
}

// RecvC128 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvC128(fmProc, tag int, vals []complex128) error {
	return recv(cm, fmProc, tag, vals, "RecvC128")
}

// BcastC128 copies vals from fmProc to every process.
func (cm *Comm) BcastC128(fmProc int, vals []complex128) error {
	return bcast(cm, fmProc, vals, "BcastC128")
}

// ReduceC128 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceC128(toProc int, op Op, dest, orig []complex128) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceC128")
}

// AllReduceC128 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceC128(op Op, dest, orig []complex128) error {
	return allReduce(cm, op, dest, orig, "AllReduceC128")
}

// AllGatherC128 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherC128(dest, orig []complex128) error {
	return allGather(cm, dest, orig, "AllGatherC128")
}

// SendC64 sends vals to toProc with tag (blocking).
func (cm *Comm) SendC64(toProc, tag int, vals []complex64) error {
	return send(cm, toProc, tag, vals, "SendC64")
}

// RecvC64 receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvC64(fmProc, tag int, vals []complex64) error {
	return recv(cm, fmProc, tag, vals, "RecvC64")
}

// BcastC64 copies vals from fmProc to every process.
func (cm *Comm) BcastC64(fmProc int, vals []complex64) error {
	return bcast(cm, fmProc, vals, "BcastC64")
}

// ReduceC64 reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceC64(toProc int, op Op, dest, orig []complex64) error {
	return reduce(cm, toProc, op, dest, orig, "ReduceC64")
}

// AllReduceC64 reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceC64(op Op, dest, orig []complex64) error {
	return allReduce(cm, op, dest, orig, "AllReduceC64")
}

// AllGatherC64 gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherC64(dest, orig []complex64) error {
	return allGather(cm, dest, orig, "AllGatherC64")
}

// SendInt sends vals to toProc with tag (blocking).
func (cm *Comm) SendInt(toProc, tag int, vals []int) error {
	if int64Platform {
		return send(cm, toProc, tag, asI64(vals), "SendInt")
	}
	return send(cm, toProc, tag, asI32(vals), "SendInt")
}

// RecvInt receives vals from fmProc with tag (blocking).
func (cm *Comm) RecvInt(fmProc, tag int, vals []int) error {
	if int64Platform {
		return recv(cm, fmProc, tag, asI64(vals), "RecvInt")
	}
	return recv(cm, fmProc, tag, asI32(vals), "RecvInt")
}

// BcastInt copies vals from fmProc to every process.
func (cm *Comm) BcastInt(fmProc int, vals []int) error {
	if int64Platform {
		return bcast(cm, fmProc, asI64(vals), "BcastInt")
	}
	return bcast(cm, fmProc, asI32(vals), "BcastInt")
}

// ReduceInt reduces orig over all processes into dest on toProc.
func (cm *Comm) ReduceInt(toProc int, op Op, dest, orig []int) error {
	if int64Platform {
		return reduce(cm, toProc, op, asI64(dest), asI64(orig), "ReduceInt")
	}
	return reduce(cm, toProc, op, asI32(dest), asI32(orig), "ReduceInt")
}

// AllReduceInt reduces orig over all processes into dest on every process.
func (cm *Comm) AllReduceInt(op Op, dest, orig []int) error {
	if int64Platform {
		return allReduce(cm, op, asI64(dest), asI64(orig), "AllReduceInt")
	}
	return allReduce(cm, op, asI32(dest), asI32(orig), "AllReduceInt")
}

// AllGatherInt gathers orig from every process into dest, in rank order.
func (cm *Comm) AllGatherInt(dest, orig []int) error {
	if int64Platform {
		return allGather(cm, asI64(dest), asI64(orig), "AllGatherInt")
	}
	return allGather(cm, asI32(dest), asI32(orig), "AllGatherInt")
}
