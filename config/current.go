package config

import "strings"

// Source says where a setting's value comes from.
type Source int

const (
	// FromDefault: the variable is unset or empty; its default applies.
	FromDefault Source = iota
	// FromEnvironment: the variable is set.
	FromEnvironment
)

func (s Source) String() string {
	if s == FromEnvironment {
		return "environment"
	}
	return "default"
}

// Current is a variable of the table with its value in one environment.
type Current struct {
	Var
	Value  string // as set (trimmed), or the default
	Source Source
	// Err is the parse error of a value that is set but invalid (setup
	// then fails on every rank with it); nil otherwise.
	Err error
}

// Settings returns every variable of the table, in table order, with its
// value in environ ("NAME=value" entries, as from os.Environ; the last
// entry of a name wins, as in os.Getenv). It reads nothing else, so a
// tool can describe another process's environment.
func Settings(environ []string) []Current {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	out := make([]Current, 0, len(Vars))
	for _, v := range Vars {
		c := Current{Var: v, Value: v.Default}
		if s := strings.TrimSpace(env[v.Name]); s != "" {
			c.Value, c.Source = s, FromEnvironment
			_, c.Err = v.Parse(s)
		}
		out = append(out, c)
	}
	return out
}
