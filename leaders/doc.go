// Package leaders decides which local ranks of a node act as leaders in the
// DPML engine, from where each rank runs (its CPU binding mapped to sockets,
// NUMA nodes and cores through Linux sysfs; no hwloc).
//
// The engine partitions a message among l leaders per node; leader j of
// every node reduces partition j with leader j of the other nodes, in leader
// communicator j. Two rules shape the choice:
//
//   - Spread leaders over sockets (then NUMA nodes, then cores). The
//     intra-node phases gather every rank's data to the leaders and scatter
//     the result back; a leader serving ranks of its own socket keeps that
//     traffic off the inter-socket link, and leaders on different sockets
//     use both sockets' memory bandwidth and both PCIe roots. This is the
//     socket-level (and, with NIC locality, HCA-aware) leader placement of
//     the DPML paper; SocketLeaders gives the one-per-socket set the
//     socket-level SHArP variant uses, and NodeLeader prefers the socket
//     nearest the RDMA device when sysfs says which one it is.
//
//   - Use one prefix order. Order returns a single permutation of the local
//     ranks such that its first l entries are a good leader set for every
//     l. The engine splits the world once, with color = the rank's position
//     in its node's Order (leader communicator j holds position j of every
//     node), and every leader count l it later tries (the autotuner varies
//     it per message size) just uses communicators 0..l-1: one split serves
//     every l.
//
// The evenly-spread order inside a domain is Spread: bisection order, equal
// to bit reversal (van der Corput order) for powers of two, so any prefix of
// length 2^m is evenly spread; see Order for the exact rules.
//
// Use: each rank calls Local, encodes its Place with Encode, the engine
// allgathers PlaceWords int64 per rank over the node communicator, decodes
// with DecodePlaces and calls Order. Order is deterministic, so all ranks
// agree without further communication. Without topology information (no
// binding, no sysfs) all places are equal and Order falls back to Spread of
// the local ranks.
package leaders
