// Package config declares every DPML_* environment variable in one table.
//
// The table is the single source of truth: the engine, the drop-in library
// and the tools read settings only through this package, and
// docs/ENVIRONMENT.md is generated from it (go generate ./config), so a
// setting cannot exist without documentation. Each variable states its scope:
// settings that shape the collective (leaders, pipeline depth, segment size)
// must be equal on all ranks, or ranks would run different plans and deadlock
// or compute wrong results.
package config

//go:generate go run ./gen -o ../docs/ENVIRONMENT.md
