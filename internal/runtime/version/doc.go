// Package version names the build of DPML-Go's commands for their
// -version flag: the commit they were built from, the Go release, and
// whether the vector reduction kernels are in.
//
//	fmt.Println(version.String("dpmlrun"))
//	// dpmlrun 73a799c0ee5f... (go1.26.8 linux/amd64, vector kernels: yes)
//
// make sets the commit at link time (-ldflags "-X
// github.com/dpmlgo/dpml/internal/version.Commit=..."); a plain go build
// falls back to what the Go toolchain recorded (vcs.revision), else
// "unknown".
package version
