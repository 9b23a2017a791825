// Package miniamr is a MiniAMR-style adaptive-mesh mini-app: the algorithm
// shape of Sandia's miniAMR (Mantevo) in plain Go, used to measure what the
// DPML allreduce changes in an application whose allreduces are a mix of
// many small integer reductions (mesh refinement) and per-variable float64
// checksums.
//
// # Mesh
//
// The unit cube is covered by a grid of root blocks: each rank of a px x py x
// pz process grid owns InitX x InitY x InitZ of them (miniAMR's init_x, ...).
// A block holds N^3 cells (plus one ghost layer) of Vars variables. Blocks
// refine into 8 children and 8 sibling leaves coarsen back into their
// parent, up to MaxLevel levels (miniAMR's num_refine); face neighbours
// never differ by more than one level. A block and its descendants stay on
// the rank that owns the root block (no load balancing, see the README).
//
// # Time steps
//
// Like miniAMR's driver: every time step runs Stages stages; a stage fills
// the ghost cells of every block (from the face neighbours, on the same rank
// or through messages with the 6 face-neighbour ranks), applies the 7-point
// averaging stencil to every variable of every block, and every
// ChecksumFreq stages sums every variable over all cells of all blocks
// (one allreduce of Vars float64) and checks the sums against the previous
// ones. After each step the objects (spheres) move; every RefineFreq steps
// the mesh adapts: blocks that the surface of an object crosses refine,
// the others coarsen, then the 2:1 balance is restored by a loop that
// allreduces its change count until nothing changes, and the number of
// blocks per level is allreduced (int64 vector of MaxLevel+1).
//
// Values are extensive, as in miniAMR: a refined cell gives each of its 8
// children an eighth of its value and a coarsened parent cell is the sum of
// its 8 children. Ghost values between levels are chosen so that the stencil
// conserves every variable's total exactly (in exact arithmetic): a fine
// ghost cell gets a quarter of the coarse cell across the face, a coarse
// ghost cell the sum of the 4 fine cells across the face, and cells on the
// domain boundary reflect. So the checksums stay constant up to rounding
// and any error in the mesh bookkeeping or the communication shows.
//
// # Determinism
//
// Blocks are kept sorted by (level, z, y, x); every loop runs in that order
// on one goroutine, and maps are only used for lookups. The checksums are
// therefore bit-identical on every rank and across runs with the same
// backend plan and layout; backends differ only in the order in which the
// allreduce adds the ranks' partial sums.
package miniamr
