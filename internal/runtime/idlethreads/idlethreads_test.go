package idlethreads

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestOwnText(t *testing.T) {
	maps := `55d0a0000000-55d0a0010000 r--p 00000000 08:01 100 /usr/bin/prog
55d0a0010000-55d0a0020000 r-xp 00010000 08:01 100 /usr/bin/prog
7f0000000000-7f0000100000 r--p 00000000 08:01 200 /opt/lib/libdpml.so
7f0000100000-7f0000400000 r-xp 00100000 08:01 200 /opt/lib/libdpml.so
7f0000400000-7f0000500000 r--p 00400000 08:01 200 /opt/lib/libdpml.so
7f0000600000-7f0000700000 r-xp 00000000 08:01 300 /lib/libc.so.6
7f0000800000-7f0000801000 r-xp 00000000 00:00 0 
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]
`
	for _, c := range []struct {
		name string
		pc   uint64
		want []textRange
		err  bool
	}{
		{"library", 0x7f0000200000, []textRange{{0x7f0000100000, 0x7f0000400000}}, false},
		{"program", 0x55d0a0010010, []textRange{{0x55d0a0010000, 0x55d0a0020000}}, false},
		{"read-only part is no code", 0x7f0000000010, nil, true},
		{"anonymous", 0x7f0000800010, nil, true},
		{"vdso", 0x7ffd00000010, nil, true},
		{"nowhere", 0x10, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ownText(maps, c.pc)
			if (err != nil) != c.err {
				t.Fatalf("err %v, want error %v", err, c.err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestSyscallPC(t *testing.T) {
	for _, c := range []struct {
		in string
		pc uint64
		ok bool
	}{
		{"running\n", 0, false},
		{"202 0xc000010148 0x80 0x0 0x0 0x0 0x0 0x7ffc12345678 0x47a1c3\n", 0x47a1c3, true},
		{"-1 0x7ffc12345678 0x7f00deadbeef\n", 0x7f00deadbeef, true},
		{"", 0, false},
		{"202 0x1 zz\n", 0, false},
	} {
		pc, ok := syscallPC(c.in)
		if pc != c.pc || ok != c.ok {
			t.Errorf("syscallPC(%q) = %#x, %v; want %#x, %v", c.in, pc, ok, c.pc, c.ok)
		}
	}
}

// TestDemote: in a Go test binary the runtime's threads are the program's
// own; Demote moves the sleeping ones (sysmon at least: it sleeps in the
// runtime's own nanosleep) and leaves the main thread and the caller as
// they were. The oracle reads each thread's policy from the kernel.
func TestDemote(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	time.Sleep(20 * time.Millisecond) // let sysmon back off into its sleeps
	n, err := Demote()
	if err != nil {
		t.Fatal(err)
	}
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	idle := 0
	for _, tid := range tids {
		p, err := policy(tid)
		if err != nil {
			continue
		}
		if p == unix.SCHED_IDLE {
			idle++
		}
		if (tid == unix.Getpid() || tid == unix.Gettid()) && p == unix.SCHED_IDLE {
			t.Errorf("thread %d (main or caller) moved to SCHED_IDLE", tid)
		}
	}
	if n < 1 || idle < n {
		t.Errorf("Demote moved %d thread(s), %d idle of %d; want at least 1 and every moved one idle", n, idle, len(tids))
	}
}

// policy returns thread tid's scheduling policy (unix.SCHED_*).
func policy(tid int) (uint32, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, err
	}
	return a.Policy, nil
}

// threads lists the process's thread ids.
func threads() ([]int, error) {
	f, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, s := range names {
		if t, err := strconv.Atoi(s); err == nil {
			out = append(out, t)
		}
	}
	return out, nil
}
