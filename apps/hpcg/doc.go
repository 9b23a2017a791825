// Package hpcg is an HPCG-style conjugate-gradient mini-app: the algorithm
// shape of the HPCG benchmark (reference version 3.x) in plain Go, used to
// measure what the DPML allreduce changes in an application whose
// allreduces are latency-bound one-double DDOTs.
//
// # Problem
//
// Every rank owns an nx x ny x nz box of a global grid of px*nx x py*ny x
// pz*nz points; the ranks form a px x py x pz process grid (chosen as cubic
// as possible by default). The operator is HPCG's 27-point stencil: 26 on
// the diagonal, -1 for each of the (up to) 26 neighbours inside the global
// domain (points outside it are dropped, a homogeneous Dirichlet boundary).
// The right-hand side b = A*1, so the exact solution is all ones; the
// initial guess is zero.
//
// # Algorithm
//
// CG (HPCG's CG_ref) preconditioned with a V-cycle multigrid (ComputeMG_ref):
// on every level but the coarsest, one symmetric Gauss-Seidel
// pre-smoothing sweep, the residual (SpMV), restriction by injection to the
// grid of half the points per dimension, the coarse correction, prolongation
// by injection and one post-smoothing sweep; on the coarsest level, one
// SymGS sweep. SymGS is HPCG's: a forward then a backward Gauss-Seidel
// sweep over the local rows, with the halo values exchanged once at the
// start (so it is block Jacobi across ranks, exactly as in HPCG's
// reference). Vectors are stored with a ghost layer; a halo exchange sends
// each of the up to 26 neighbours its face, edge or corner.
//
// Each CG iteration makes three DDOTs (r.z, p.Ap and r.r): a local dot
// product in a fixed order, then an allreduce of one float64 through a
// Reducer (the native MPI_Allreduce or DPML, see apps/internal/backend).
//
// # Determinism
//
// All arithmetic happens in a fixed order on one goroutine, so the
// residual history is a function of the allreduce results only: it is
// bit-identical across runs with the same backend plan and layout, and on
// every rank (an allreduce gives the same bits everywhere). Backends sum the
// ranks' partial dots in different orders, so their histories may differ in
// the last bits; those differences grow slowly with the iterations (see the
// README for the tolerance the tests use).
package hpcg
