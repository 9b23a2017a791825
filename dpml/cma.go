package dpml

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dpmlgo/dpml/mpi"
)

// Cross-memory attach (process_vm_readv/writev) lets a leader read its
// partition straight from each local rank's send buffer and write the
// reduced partition straight into each rank's receive buffer. That removes
// the copy into the shared segment and the copy out of it: each byte crosses
// between cores once each way, which is what a large allreduce on a
// many-core node is bound by. Each transfer is a system call, so the plans
// use it only for large messages.

// cmaProbe checks at setup that this rank can read a peer's memory (the
// kernel may forbid it: Yama ptrace_scope, containers). It is collective
// over the node; every rank learns whether all of the node can.
func (c *Comm) cmaProbe() (bool, error) {
	// Each rank exposes one private word holding its pid; its neighbour
	// reads it back.
	word := new(uint64)
	*word = uint64(unix.Getpid())
	mine := []int64{int64(unix.Getpid()), int64(uintptr(unsafe.Pointer(word)))}
	all := make([]int64, 2*c.ppn)
	if err := mpi.Allgather(c.node, mine, all); err != nil {
		return false, fmt.Errorf("gather pids: %w", err)
	}
	c.pids = make([]int, c.ppn)
	for i := range c.pids {
		c.pids[i] = int(all[2*i])
	}
	ok := int32(1)
	if c.ppn > 1 {
		peer := (c.local + 1) % c.ppn
		var got uint64
		err := cmaRead(c.pids[peer], unsafe.Pointer(&got), uintptr(all[2*peer+1]), 8)
		if err != nil || got != uint64(c.pids[peer]) {
			ok = 0
		}
	}
	// Keep word alive until every neighbour has read it.
	res := []int32{ok}
	if err := mpi.AllreduceInPlace(c.world, res, mpi.OpMin); err != nil {
		return false, fmt.Errorf("agree on cross-memory attach: %w", err)
	}
	runtime.KeepAlive(word)
	return res[0] == 1, nil
}

// cmaRead copies n bytes at remote address addr of process pid into local.
func cmaRead(pid int, local unsafe.Pointer, addr uintptr, n int) error {
	return cmaCopy(pid, local, addr, n, false)
}

// cmaWrite copies n bytes from local to remote address addr of process pid.
func cmaWrite(pid int, local unsafe.Pointer, addr uintptr, n int) error {
	return cmaCopy(pid, local, addr, n, true)
}

// cmaCopy runs one transfer to completion: the kernel may move less than
// asked (a partial transfer), and a signal may interrupt it. The I/O
// vectors live on the stack (direct calls, not a function value through
// which they would escape): no allocation per transfer.
func cmaCopy(pid int, local unsafe.Pointer, addr uintptr, n int, write bool) error {
	name := "process_vm_readv"
	if write {
		name = "process_vm_writev"
	}
	for n > 0 {
		l := [1]unix.Iovec{{Base: (*byte)(local), Len: uint64(n)}}
		r := [1]unix.RemoteIovec{{Base: addr, Len: n}}
		var got int
		var err error
		if write {
			got, err = unix.ProcessVMWritev(pid, l[:], r[:], 0)
		} else {
			got, err = unix.ProcessVMReadv(pid, l[:], r[:], 0)
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("%s(pid %d, %d bytes): %w", name, pid, n, err)
		}
		if got == 0 {
			return fmt.Errorf("%s(pid %d): no progress", name, pid)
		}
		local, addr, n = unsafe.Add(local, got), addr+uintptr(got), n-got
	}
	return nil
}
