package tsc

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"sync"
)

var usable = sync.OnceValue(func() bool {
	if !supported {
		return false
	}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil && strings.TrimSpace(string(b)) == "tsc" {
		return true
	}
	return cpuFlags("constant_tsc", "nonstop_tsc")
})

// Usable reports whether Read is a clock on this machine (see the package
// doc). The answer is read once and kept.
func Usable() bool { return usable() }

// cpuFlags reports whether the first "flags" line of /proc/cpuinfo lists
// every one of want.
func cpuFlags(want ...string) bool {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("flags")) {
			continue
		}
		_, list, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return false
		}
		have := make(map[string]bool)
		for _, w := range strings.Fields(string(list)) {
			have[w] = true
		}
		for _, w := range want {
			if !have[w] {
				return false
			}
		}
		return true
	}
	return false
}
