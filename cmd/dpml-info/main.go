package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/runtime/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is the command line: the listing of environ's settings to stdout,
// problems to stderr; it returns the exit status (0 fine, 1 a problem in
// the environment, 2 a usage error).
func run(args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dpml-info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "one line per variable, without its meaning")
	showVersion := fs.Bool("version", false, "print the build and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpml-info [-short] [-version]")
		fmt.Fprintln(stderr, "Lists every DPML_* setting: current value, source (default or environment), scope, meaning.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dpml-info: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("dpml-info"))
		return 0
	}

	cur := config.Settings(environ)
	fmt.Fprintln(stdout, "DPML-Go settings: NAME = value (source; scope). Full table: docs/ENVIRONMENT.md")
	list(stdout, cur, config.User, *short)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "Internal and test-only variables (set by dpmlrun and the test harness, or read by the tests only):")
	list(stdout, cur, -1, *short)

	status := 0
	var problems []string
	for _, c := range cur {
		if c.Err != nil {
			problems = append(problems, fmt.Sprintf("%s=%s is invalid: %v", c.Name, c.Value, c.Err))
		}
	}
	for _, u := range config.Unknown(environ) {
		problems = append(problems, u.String())
	}
	if len(problems) > 0 {
		status = 1
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, "Problems in the environment:")
		for _, p := range problems {
			fmt.Fprintln(stdout, "  "+p)
			fmt.Fprintln(stderr, "dpml-info: "+p)
		}
	}
	return status
}

// list prints the variables of class cls (cls < 0: every class but User).
func list(w io.Writer, cur []config.Current, cls config.Class, short bool) {
	for _, c := range cur {
		if (cls >= 0 && c.Class != cls) || (cls < 0 && c.Class == config.User) {
			continue
		}
		val := c.Value
		if val == "" {
			val = "(unset)"
		}
		what := c.Source.String()
		if c.Err != nil {
			what += ", INVALID"
		}
		scope := c.Scope.String()
		if c.Class != config.User {
			scope = c.Class.String() + ", " + scope
		}
		fmt.Fprintf(w, "%s = %s (%s; %s)\n", c.Name, val, what, scope)
		if !short {
			for _, line := range wrap(c.Doc, 72) {
				fmt.Fprintln(w, "    "+line)
			}
		}
	}
}

// wrap cuts s into lines of at most width bytes at spaces (a longer word
// gets a line of its own).
func wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(s) {
		if cur.Len() > 0 && cur.Len()+1+len(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}
