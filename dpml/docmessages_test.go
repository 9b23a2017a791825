package dpml

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
)

// sourceChunks returns every string literal in the repository's Go files
// (tests included: the table quotes a test's failure) and its C files,
// each format verb (%d, %s, %w, ...), a place where a value goes, replaced
// by a NUL; and the system's error texts with the operations Go names in
// them ("open", "mkdir").
func sourceChunks(t *testing.T, root string) []string {
	t.Helper()
	verb := regexp.MustCompile(`%[-+# 0-9.*\[\]]*[a-zA-Z%]`)
	cString := regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
	chunks := []string{"open", "mkdir", "read", "write", "stat"}
	for e := syscall.Errno(1); e < 134; e++ {
		chunks = append(chunks, e.Error())
	}
	// The keyword lists config prints ("want auto, model or static").
	for _, v := range config.Vars {
		if n := len(v.Values); n > 1 {
			chunks = append(chunks, "want "+strings.Join(v.Values[:n-1], ", ")+" or "+v.Values[n-1])
		}
	}
	add := func(lit string) {
		if strings.TrimSpace(lit) != "" {
			chunks = append(chunks, verb.ReplaceAllString(lit, "\x00"))
		}
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		name := d.Name()
		isGo := strings.HasSuffix(name, ".go")
		isC := strings.HasSuffix(name, ".c") || strings.HasSuffix(name, ".h")
		if d.IsDir() || !isGo && !isC || name == "docmessages_test.go" { // not the fakes below
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isC {
			for _, m := range cString.FindAllString(string(src), -1) {
				if s, err := strconv.Unquote(m); err == nil {
					add(s)
				} else {
					add(m[1 : len(m)-1])
				}
			}
			return nil
		}
		fset := token.NewFileSet()
		var sc scanner.Scanner
		sc.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
		for {
			_, tok, lit := sc.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.STRING {
				if s, err := strconv.Unquote(lit); err == nil {
					add(s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return chunks
}

// flagRE matches a command-line flag and its value (-ppn 3,2).
var flagRE = regexp.MustCompile(`^-[a-z]+ [^ ]+$`)

// docMessages returns the messages docs/RELIABILITY.md quotes as printed:
// the code spans of its table's "now (observed)" column with more than one
// word, leaving out command lines and flags.
func docMessages(t *testing.T, doc string) []string {
	t.Helper()
	span := regexp.MustCompile("`([^`]+)`")
	var msgs []string
	col := -1
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			col = -1
			continue
		}
		cells := strings.Split(line, " | ")
		if col < 0 {
			for i, c := range cells {
				if strings.HasPrefix(strings.TrimSpace(c), "now") {
					col = i
				}
			}
			continue
		}
		if col >= len(cells) {
			continue
		}
		for _, m := range span.FindAllStringSubmatch(cells[col], -1) {
			s := m[1]
			if !strings.Contains(s, " ") || strings.Contains(s, " -- ") || strings.HasPrefix(s, "bin/") ||
				strings.HasPrefix(s, "kill ") || flagRE.MatchString(s) {
				continue // a word, a command line, a flag
			}
			msgs = append(msgs, s)
		}
	}
	return msgs
}

// valueRE matches what a message fills in: quoted values, variable
// names, what follows "=", rank lists, numbers (with units), paths, the keywords a number
// may be instead ("(or auto)"), and brackets and parentheses around them.
var valueRE = regexp.MustCompile(`"[^"]*"|\bDPML_[A-Z_]+|=[A-Za-z0-9_.-]+|\branks? [0-9][0-9,-]*|/[^ ;:,)]*|\b[0-9][0-9a-zA-Zµ.,-]*|\bN\b|\(or [^)]*\)|[][()]`)

// valuePat is what a value of the message may stand for in a literal: a
// format verb, or fixed text up to the next joint.
const valuePat = `(?:\x00|[^:;\x00]*?)`

// unprinted returns the parts of msg that no source literal prints: the
// message is cut at its elisions ("..."), at the joints of wrapped or
// joined texts (": ", "; ", ", "), and each part must match one literal,
// its words in order, each of its values standing for a format verb or
// for the literal's own text; or its first words must match one literal
// and the rest another one after a verb ("count differs between ranks":
// "count" given to "%s differs between ranks"). Parts without a word of
// four letters are not checked.
func unprinted(msg string, chunks []string) []string {
	var missing []string
	for _, piece := range strings.Split(msg, "...") {
		for _, part := range regexp.MustCompile(`: |; |, `).Split(piece, -1) {
			part = strings.TrimSpace(part)
			if !regexp.MustCompile(`[A-Za-z]{4}`).MatchString(valueRE.ReplaceAllString(part, " ")) {
				continue
			}
			matches := func(p string) bool {
				re := regexp.MustCompile(p)
				for _, c := range chunks {
					if re.MatchString(c) {
						return true
					}
				}
				return false
			}
			found := matches(pattern(part))
			// Or printed in two pieces: the first words by one literal,
			// given to another one's verb.
			words := strings.Split(part, " ")
			for k := 1; k < len(words) && !found; k++ {
				found = matches(pattern(strings.Join(words[:k], " "))) && matches(valuePat+" "+pattern(strings.Join(words[k:], " ")))
			}
			if !found {
				missing = append(missing, part)
			}
		}
	}
	return missing
}

// pattern is the regular expression of a message part: its text quoted,
// its values valuePat.
func pattern(part string) string {
	var b strings.Builder
	last := 0
	for _, m := range valueRE.FindAllStringIndex(part, -1) {
		b.WriteString(regexp.QuoteMeta(part[last:m[0]]))
		b.WriteString(valuePat)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(part[last:]))
	return b.String()
}

// TestReliabilityQuotesPrintedMessages: every message docs/RELIABILITY.md
// quotes in its table as what happens now is printed by the code: each of
// its parts matches a string literal of the sources (see unprinted), so a
// quoted message the code never prints fails.
func TestReliabilityQuotesPrintedMessages(t *testing.T) {
	if mpitest.InRank() {
		t.Skip("parent-only test")
	}
	doc, err := os.ReadFile("../docs/RELIABILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	chunks := sourceChunks(t, "..")
	msgs := docMessages(t, string(doc))
	if len(msgs) < 20 {
		t.Fatalf("found %d quoted messages in the table; the parser lost the table", len(msgs))
	}
	for _, m := range msgs {
		if miss := unprinted(m, chunks); len(miss) > 0 {
			t.Errorf("docs/RELIABILITY.md quotes %q, but nothing prints %q", m, miss)
		}
	}
	// The check itself must be able to fail.
	for _, fake := range []string{
		"dpml: invalid setting: DPML_TREE_RADIX=0: want a radix between 1 and 64",
		"segment bytes d (DPML_SEGMENT_BYTES or WithSegmentBytes): out of range",
		"timeout 1ns (DPML_TIMEOUT or WithTimeout): below the 1ms floor (negative: wait forever)",
		"DPML_TIMEOUT: rounds down to 0 ns",
	} {
		if len(unprinted(fake, chunks)) == 0 {
			t.Errorf("a message the code never prints passes the check: %q", fake)
		}
	}
}
