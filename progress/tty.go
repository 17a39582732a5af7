package progress

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openctl/openctl"
)

// The TTY view's symbols.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const (
	symPending = "·"
	symDone    = "✓"
	symFailed  = "✗"
	symSkipped = "-"
)

// The ANSI sequences the view uses.
const (
	clearLine = "\x1b[2K"  // erase the line the cursor is on
	clearDown = "\x1b[J"   // erase from the cursor to the end of the screen
	upFormat  = "\x1b[%dA" // move the cursor up n lines
)

// draw redraws the TTY view: it moves the cursor back over the live lines
// last drawn, writes the final line of each resource that finished since
// (those lines stay, above the view), then the live lines of the
// resources still pending or running. Nothing is written when nothing
// changed. final draws every resource's final line and leaves no live
// lines. r.mu is held.
func (r *Renderer) draw(final bool) {
	now := r.now()
	width, height := r.size()
	var done []string
	for _, x := range r.rows {
		if final && x.state != finished {
			x.finish(r.resultFor(x))
		}
		if x.state == finished && !x.shown {
			x.shown = true
			done = append(done, cut(r.line(x, now), width-1))
		}
	}
	var live []string
	if !final {
		live = r.liveLines(now, width, height)
	}
	if len(done) == 0 && slices.Equal(live, r.live) {
		return
	}
	var b strings.Builder
	if len(r.live) > 0 {
		fmt.Fprintf(&b, upFormat, len(r.live))
	}
	for _, l := range append(done, live...) {
		b.WriteString("\r" + clearLine + l + "\n")
	}
	if len(done)+len(live) < len(r.live) {
		b.WriteString(clearDown)
	}
	r.live = live
	r.write(b.String())
}

// liveLines renders the resources not finished yet: running ones first
// when they do not all fit in the terminal's height, and a last line
// counting those left out.
func (r *Renderer) liveLines(now time.Time, width, height int) []string {
	var active []*row
	for _, x := range r.rows {
		if x.state != finished {
			active = append(active, x)
		}
	}
	limit := len(active)
	if height > 0 && limit > height-1 {
		limit = max(height-2, 1)
		slices.SortStableFunc(active, func(a, b *row) int { return int(b.state) - int(a.state) })
	}
	lines := make([]string, 0, limit+1)
	for _, x := range active[:limit] {
		lines = append(lines, cut(r.line(x, now), width-1))
	}
	if n := len(active) - limit; n > 0 {
		lines = append(lines, cut(fmt.Sprintf("  … and %d more", n), width-1))
	}
	return lines
}

// line renders a resource: symbol, name, elapsed time, then what it is
// doing or how it ended.
//
//	⠹ svc/web-01     12s  applying: pulling image nginx:1.27
//	✓ svc/web-02    3.2s  created
func (r *Renderer) line(x *row, now time.Time) string {
	var sym, elapsed, what string
	switch x.state {
	case pending:
		sym, what = symPending, "pending"
	case running:
		sym = spinner[r.frame(now)]
		elapsed = seconds(now.Sub(x.start))
		what = x.phase
		switch {
		case x.phase == "retrying":
			wait := ""
			if left := x.retryAt.Sub(now); left > 0 {
				wait = " in " + duration(left)
			}
			what = fmt.Sprintf("retrying (attempt %d%s)", x.attempt, wait)
			if x.retry != "" {
				what += ": " + x.retry
			}
		case x.step != "":
			what += ": " + sanitize(x.step)
		}
	default:
		sym = symDone
		switch x.outcome {
		case "", openctl.OutcomeSkipped:
			sym = symSkipped
		case openctl.OutcomeFailed:
			sym = symFailed
		}
		if x.outcome != "" && x.outcome != openctl.OutcomeSkipped {
			elapsed = duration(x.elapsed)
		}
		what = r.outcomeText(x)
	}
	pad := r.nameMax - utf8.RuneCountInString(x.name)
	return fmt.Sprintf("%s %s%s  %6s  %s", sym, x.name, strings.Repeat(" ", max(pad, 0)), elapsed, what)
}

// frame returns the spinner frame to show at now.
func (r *Renderer) frame(now time.Time) int {
	every := r.interval
	if every <= 0 {
		every = DefaultInterval
	}
	n := int(now.Sub(r.began) / every)
	if n < 0 {
		n = 0
	}
	return n % len(spinner)
}

// cut shortens s to at most n runes, ending it with "…" when it is cut.
func cut(s string, n int) string {
	if n < 1 {
		n = 1
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

// Interleave returns a writer for another stream that shares the terminal
// with the view, such as standard error receiving log lines while the
// view is drawn on standard output. In TTY mode each Write erases the live
// lines, writes p to w, then draws the live lines again below it, so that
// what is written lands above the view instead of across it (write whole
// lines: one Write per line, as slog handlers do). In the other modes,
// and when no live line is shown (before the first redraw, after
// Finish), writes go straight to w. The writer is safe for concurrent
// use.
func (r *Renderer) Interleave(w io.Writer) io.Writer { return &interleaved{r: r, w: w} }

// interleaved is the writer Interleave returns.
type interleaved struct {
	r *Renderer
	w io.Writer
}

func (iw *interleaved) Write(p []byte) (int, error) {
	r := iw.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mode != TTY || len(r.live) == 0 {
		return iw.w.Write(p)
	}
	r.write(fmt.Sprintf(upFormat, len(r.live)) + "\r" + clearDown)
	r.live = nil
	n, err := iw.w.Write(p)
	if !r.closed { // once closed, Finish draws the final lines, or nothing is drawn again
		r.draw(false)
	}
	return n, err
}
