package bench

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress is a progress bar over the points of a sweep. A nil *Progress
// does nothing, so callers need not check whether it is enabled.
type Progress struct {
	bar *progressbar.ProgressBar
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// NewProgress returns a bar of total steps writing to w, or nil when not
// enabled.
func NewProgress(w io.Writer, total int, enabled bool) *Progress {
	if !enabled || total <= 0 {
		return nil
	}
	return &Progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("sweep"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

// Step describes the point about to run and counts the previous one.
func (p *Progress) Describe(desc string) {
	if p != nil {
		p.bar.Describe(desc)
	}
}

// Add counts n finished steps.
func (p *Progress) Add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// Done finishes and clears the bar.
func (p *Progress) Done() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

// Clear erases the bar from the terminal (before printing other lines); it
// is redrawn on the next Add.
func (p *Progress) Clear() {
	if p != nil {
		_ = p.bar.Clear()
	}
}
