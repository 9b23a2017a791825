// Command gen writes docs/ENVIRONMENT.md from config.Vars.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dpmlgo/dpml/config"
)

func main() {
	out := flag.String("o", "docs/ENVIRONMENT.md", "output file")
	flag.Parse()
	if err := os.WriteFile(*out, []byte(config.Markdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
