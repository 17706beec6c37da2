// Package progress draws progress on long operations: a single updating line
// on a terminal, a line every few seconds otherwise (logs, CI).
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar reports progress of a job with an optional known total.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	label    string
	unit     string
	total    int64
	cur      int64
	extra    string
	start    time.Time
	last     time.Time
	every    time.Duration
	disabled bool
}

// New starts a bar writing to stderr. total <= 0 means unknown.
func New(label, unit string, total int64) *Bar {
	tty := false
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		tty = true
	}
	every := 5 * time.Second
	if tty {
		every = 200 * time.Millisecond
	}
	return &Bar{w: os.Stderr, tty: tty, label: label, unit: unit, total: total, start: time.Now(), every: every}
}

// Quiet disables all output.
func (b *Bar) Quiet() *Bar { b.disabled = true; return b }

// Set records the current amount and an extra status text, and redraws if
// enough time has passed.
func (b *Bar) Set(cur int64, extra string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur, b.extra = cur, extra
	if now := time.Now(); now.Sub(b.last) >= b.every {
		b.last = now
		b.draw(false)
	}
}

// Done draws the final state and ends the line.
func (b *Bar) Done(extra string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if extra != "" {
		b.extra = extra
	}
	b.draw(true)
}

func (b *Bar) draw(final bool) {
	if b.disabled {
		return
	}
	el := time.Since(b.start).Seconds()
	var sb strings.Builder
	sb.WriteString(b.label)
	if b.total > 0 {
		pct := float64(b.cur) / float64(b.total) * 100
		fmt.Fprintf(&sb, " %5.1f%%", pct)
		if b.cur > 0 && !final && b.cur < b.total {
			eta := el * float64(b.total-b.cur) / float64(b.cur)
			fmt.Fprintf(&sb, " ETA %s", (time.Duration(eta) * time.Second).String())
		}
	}
	if b.extra != "" {
		sb.WriteString(" ")
		sb.WriteString(b.extra)
	}
	fmt.Fprintf(&sb, " [%.1fs]", el)
	line := sb.String()
	if b.tty {
		fmt.Fprintf(b.w, "\r\033[K%s", line)
		if final {
			fmt.Fprintln(b.w)
		}
	} else {
		fmt.Fprintln(b.w, line)
	}
}

// Human formats a count with SI suffixes.
func Human(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Bytes formats a byte count with a binary unit (KiB, MiB, GiB).
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
