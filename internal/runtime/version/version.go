package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Commit is the git commit of the build, set at link time by make.
var Commit string

// String is the one-line version of program prog.
func String(prog string) string {
	return fmt.Sprintf("%s %s (%s %s/%s, vector kernels: %s)", prog, commit(), runtime.Version(),
		runtime.GOOS, runtime.GOARCH, yesNo(VectorKernels))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no (build with GOEXPERIMENT=simd on amd64)"
}

// commit is Commit, else the revision the toolchain recorded, else the
// module version, else "unknown".
func commit() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) string {
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev != "" && dirty:
		return rev + "-dirty"
	case rev != "":
		return rev
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.Main.Version
	}
	return "unknown"
}
