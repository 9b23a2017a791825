// Package config declares every DPML_* environment variable in one table.
//
//	n, err := config.IntOrAuto(config.Leaders) // DPML_LEADERS: 0 for auto, or an error naming the variable
//	for _, c := range config.Settings(os.Environ()) {
//		fmt.Println(c.Name, c.Value, c.Source) // every variable: value, default or environment
//	}
//	for _, u := range config.Unknown(os.Environ()) {
//		fmt.Fprintln(os.Stderr, "warning:", u) // "DPML_LEADER is not a DPML setting (nearest: DPML_LEADERS)"
//	}
//
// The table is the single source of truth: the engine, the drop-in library
// and the tools read settings only through this package, and
// docs/ENVIRONMENT.md is generated from it (go generate ./config), so a
// setting cannot exist without documentation. Each variable states its scope:
// settings that shape the collective (leaders, pipeline depth, segment size)
// must be equal on all ranks, or ranks would run different plans and deadlock
// or compute wrong results. Class sets apart the variables that DPML's own
// tools set (Internal) and those only the tests read (TestOnly); Unknown
// finds misspelt names, which would otherwise be ignored without a word:
// a program or the engine calls it at start and warns once per name.
package config

//go:generate go run ./gen -o ../docs/ENVIRONMENT.md
