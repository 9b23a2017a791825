package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"revision", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}}}, "abc123"},
		{"dirty tree", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}, "abc123-dirty"},
		{"clean tree", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "false"}, {Key: "vcs.revision", Value: "def"}}}, "def"},
		{"module version", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"development build", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "unknown"},
		{"nothing", debug.BuildInfo{}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(&tc.bi); got != tc.want {
				t.Errorf("fromBuildInfo = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	old := Commit
	defer func() { Commit = old }()
	Commit = "0123abcd"
	s := String("dpmlrun")
	for _, want := range []string{"dpmlrun 0123abcd (", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH, "vector kernels: "} {
		if !strings.Contains(s, want) {
			t.Errorf("String = %q: no %q", s, want)
		}
	}
	if strings.Contains(s, "\n") {
		t.Errorf("String = %q: want one line", s)
	}
}
