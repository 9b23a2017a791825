// Package offline holds the cost model's offline tools: fitting a
// costmodel.Model to measurements, reporting the model against them,
// simulating tuners, and reading dpmlbench's results. dpmlbench (calibrate)
// and the tests use it; the engine and libdpml.so do not (it is where the
// gonum dependency lives).
//
//	Calibrate       fits a Model to measurement Samples (robust least squares)
//	Compare, Picks  predicted vs measured: per-point relative error; the
//	                model's pick among measured plans and its penalty
//	Simulate        drives Tuners on a synthetic cost surface; regret series
//	ReadBenchCSV    dpmlbench results.csv -> rows; SamplesFromBench -> Samples
//
// # Fitting
//
// Calibrate (CalibrateFrom a base model) fits each parameter group to its
// own samples, so any group may be missing (see package costmodel for the
// symbols; Model.CopyTime, ReduceTime and InterTime are the equations):
//
//	CopySample   (Bytes, Copies)            Seconds = Copies*a' + Bytes*b'
//	ReduceSample (Bytes, Sources, Segments, Leaders, Elem)
//	             Seconds = Segments*r0 + (Sources-1)*Bytes*c[Elem]*(1 + (Leaders-1)/P)
//	InterSample  (Bytes, Pairs, Nodes)      Pairs = 1: Seconds/ceil(lg h) = a + Bytes*b;
//	             Pairs > 1: M = Pairs*(a + Bytes*b)*ceil(lg h)/Seconds, median per cell
//	NativeSample (Bytes, Layout)            native_a, native_b
//	CallSample   (Plan, Bytes, Layout)      s: the residual per synchronisation
//
// Linear fits are iteratively reweighted least squares (gonum QR) on
// relative residuals (each row scaled by the median time of its group of
// identical inputs), Huber weights then Tukey bisquare, with an active set
// keeping every parameter >= 0; P is a 1-D search. Compare reports the
// relative error per point, the median, p90 and max, and medians per kind.
//
// # Samples from dpmlbench
//
// SamplesFromBench maps the rows of forced plans run with phase timing
// (dpmlbench run -phases): per call, copy-in and copy-out as CopySample
// with Copies = segments * active leaders; leader 0's reduce as
// ReduceSample with Bytes = partition * segments, Sources = ppn, Leaders =
// active leaders; native runs as NativeSample; every median as
// CallSample. ReadBenchCSV refuses a CSV that lacks a column it needs (a
// renamed column must not read as zeros) or holds a cell that is not a
// number; rows of cross-memory-attach plans are skipped (the model prices
// the copies).
package offline
