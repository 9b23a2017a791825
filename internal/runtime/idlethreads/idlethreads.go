package idlethreads

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnavailable wraps the reasons Demote cannot tell the runtime's threads
// (no /proc, an unreadable file): it then changes nothing.
var ErrUnavailable = errors.New("idlethreads: cannot identify the runtime's threads")

// textRange is an executable mapping [lo, hi).
type textRange struct{ lo, hi uint64 }

// ownText returns the executable mappings of the file that holds pc.
func ownText(maps string, pc uint64) ([]textRange, error) {
	type mapping struct {
		r    textRange
		exec bool
		path string
	}
	var all []mapping
	path := ""
	for _, line := range strings.Split(maps, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		a, b, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(a, 16, 64)
		hi, err2 := strconv.ParseUint(b, 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		m := mapping{r: textRange{lo, hi}, exec: strings.Contains(f[1], "x")}
		if len(f) >= 6 {
			m.path = f[5]
		}
		all = append(all, m)
		if pc >= lo && pc < hi && m.exec {
			path = m.path
		}
	}
	if path == "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("%w: no file mapping holds the package's code", ErrUnavailable)
	}
	var out []textRange
	for _, m := range all {
		if m.exec && m.path == path {
			out = append(out, m.r)
		}
	}
	return out, nil
}

// syscallPC parses /proc/TID/syscall: the program counter of a thread
// blocked in (or last stopped at) a system call, or false for one running.
func syscallPC(s string) (uint64, bool) {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] == "running" {
		return 0, false
	}
	pc, err := strconv.ParseUint(strings.TrimPrefix(f[len(f)-1], "0x"), 16, 64)
	if err != nil {
		return 0, false
	}
	return pc, true
}

// inText reports whether pc lies in one of rs.
func inText(rs []textRange, pc uint64) bool {
	for _, r := range rs {
		if pc >= r.lo && pc < r.hi {
			return true
		}
	}
	return false
}

// anchor is a function of this package: its address locates the file
// (executable or shared library) that holds the runtime.
func anchor() {}

// Demote moves to SCHED_IDLE every thread of the process, except the
// process's main thread and the calling one, whose system call was made
// from the code of the file that holds this package. It returns how many
// threads it moved (already idle ones included). A thread that exits
// meanwhile is skipped.
func Demote() (int, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	text, err := ownText(string(maps), uint64(reflect.ValueOf(anchor).Pointer()))
	if err != nil {
		return 0, err
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	main, self := unix.Getpid(), unix.Gettid()
	n := 0
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || tid == main || tid == self {
			continue
		}
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/syscall")
		if err != nil {
			continue // exited, or not readable: leave it
		}
		pc, ok := syscallPC(string(b))
		if !ok || !inText(text, pc) {
			continue
		}
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return n, fmt.Errorf("idlethreads: thread %d: %w", tid, err)
		}
		n++
	}
	return n, nil
}
