package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpmlgo/dpml/internal/tools/results"
)

// Files written by WriteAll into the output directory.
const (
	JSONFile   = results.JSONFile
	CSVFile    = results.CSVFile
	LatencyPNG = "latency.png"
	RatioPNG   = "ratio.png"
)

// WriteAll creates dir and writes results.json, results.csv and (when plots
// is set) the PNG plots into it. It returns the paths written.
func WriteAll(dir string, rep *results.Report, plots bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	var written []string
	for _, out := range []struct {
		name  string
		write func(io.Writer, *results.Report) error
	}{{JSONFile, results.WriteJSON}, {CSVFile, results.WriteCSV}} {
		p := filepath.Join(dir, out.name)
		if err := writeFile(p, func(w io.Writer) error { return out.write(w, rep) }); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	if plots {
		ps, err := WritePlots(dir, rep)
		written = append(written, ps...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
