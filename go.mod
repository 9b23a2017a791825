module github.com/dpmlgo/dpml

go 1.26.0

require (
	github.com/edsrzf/mmap-go v1.2.0
	golang.org/x/sys v0.49.0
	gonum.org/v1/gonum v0.17.0
)
