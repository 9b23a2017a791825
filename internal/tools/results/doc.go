// Package results is the benchmark clients' report schema: the JSON and
// CSV documents dpmlbench and dpmlbench-c write (Report, its Meta and one
// Result per size and variant) and their readers and writers. It imports
// the standard library only, so the offline fitting (costmodel/offline)
// and other readers depend on the format, not on the tools' plotting and
// progress bars (package internal/tools/bench).
package results
