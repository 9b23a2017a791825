// Package bench is the MPI-free part of cmd/dpmlbench: parsing of size,
// leader, pipeline and variant lists, the iteration-count policy, the
// statistics over per-iteration samples, deterministic input fills and
// bitwise result checks, the terminal table, the progress bar, the PNG
// plots and WriteAll (a run's results folder). The report schema itself,
// with its CSV and JSON encodings, is package internal/tools/results.
//
// Measurement method (implemented by cmd/dpmlbench on top of this package):
// for every message size and every variant, a few warm-up calls are timed on
// rank 0, which derives the number of timed iterations (Policy.Iterations)
// and broadcasts it so every rank runs the same count. Every timed iteration
// is preceded by a barrier and timed with MPI_Wtime on every rank. At the
// end of the size the per-iteration vectors are reduced with MPI_MAX, so
// sample i is the time the slowest rank spent in iteration i, and Summarize
// computes min / median / mean / p99 / IQR over those samples.
package bench
