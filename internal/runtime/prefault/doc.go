// Package prefault maps every page of the read-only segments of the
// object file that holds the calling code (a Go program's executable, or
// libdpml.so inside a C program) into the process's page tables.
//
// Why: the first time a code path runs in a process, each of its pages
// not yet in the process's page tables is a fault, and the ranks of a
// node run the same path at the same moment, so they fault the same
// shared pages at once and queue on them. On a 32-core node (1x32,
// libdpml.so, the program's first call of a size whose plan runs in the
// engine's Go side, after its calls of the sizes the C layer runs) the
// few lines between the C layer and the engine took 8-136 us (median 65)
// with two or three such faults per rank, and every rank waited for the
// slowest; with the pages mapped in beforehand, 2.2-2.8 us. dpml's Warm
// calls Self once per process.
//
// The pages are the file's, shared with every other process that maps it:
// nothing is copied or allocated. MADV_POPULATE_READ (Linux 5.14) maps a
// range in one call; on older kernels a read of each page does.
package prefault
