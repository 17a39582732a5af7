package progress

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
)

// state is where a row is in its life.
type state int

const (
	pending state = iota
	running
	finished
)

// row is what the Renderer knows about one resource.
type row struct {
	id      manifest.ID
	name    string
	op      string
	state   state
	phase   string // while running: "applying", "deleting", "waiting", "retrying"
	step    string // the provider's step or readiness reason
	attempt int    // while retrying: the next attempt
	retryAt time.Time
	retry   string // while retrying: the error retried
	start   time.Time
	elapsed time.Duration // when finished
	outcome openctl.Outcome
	err     error
	shown   bool // its final line has been drawn (TTY)
}

// apply updates the row with an event.
func (x *row) apply(ev openctl.Event) {
	if ev.Op != "" {
		x.op = ev.Op
	}
	if x.state == pending && ev.Type != openctl.EventSucceeded && ev.Type != openctl.EventFailed && ev.Type != openctl.EventSkipped {
		x.state, x.phase, x.start = running, working(x.op), ev.Time
	}
	switch ev.Type {
	case openctl.EventStarted:
		x.phase, x.step, x.start = working(x.op), "", ev.Time
	case openctl.EventStep:
		x.phase, x.step = working(x.op), ev.Step
	case openctl.EventRetrying:
		x.phase, x.attempt, x.retryAt, x.retry = "retrying", ev.Attempt+1, ev.Time.Add(ev.Delay), errText(ev.Err)
	case openctl.EventWaiting:
		x.phase, x.step = "waiting", ev.Step
	case openctl.EventSucceeded, openctl.EventFailed, openctl.EventSkipped:
		x.state, x.outcome, x.err, x.elapsed = finished, ev.Outcome, ev.Err, ev.Elapsed
		if x.outcome == "" {
			x.outcome = map[openctl.EventType]openctl.Outcome{openctl.EventFailed: openctl.OutcomeFailed, openctl.EventSkipped: openctl.OutcomeSkipped}[ev.Type]
		}
		if x.elapsed == 0 && !x.start.IsZero() && ev.Type != openctl.EventSkipped {
			x.elapsed = ev.Time.Sub(x.start)
		}
	}
}

// finish records a result for a row no event finished.
func (x *row) finish(res openctl.Result, ok bool) {
	x.state = finished
	if !ok {
		return // not started
	}
	x.outcome, x.err, x.elapsed = res.Outcome, res.Err, res.Duration
}

// working is the phase of a running resource: "applying" or "deleting".
func working(op string) string {
	switch op {
	case "", "apply":
		return "applying"
	case "delete":
		return "deleting"
	}
	return op
}

// failed reports whether a result is a failure to list.
func failed(o openctl.Outcome) bool {
	return o == openctl.OutcomeFailed || o == openctl.OutcomeSkipped
}

// skipCause returns the resource whose failure made err's resource be
// skipped, if that is what err says.
func skipCause(err error) (manifest.ID, bool) {
	var se *openctl.SkippedError
	if errors.As(err, &se) && se.Cause != (manifest.ID{}) {
		return se.Cause, true
	}
	return manifest.ID{}, false
}

// outcomeText says how a finished resource ended: "created", "failed:
// <error>", "skipped: depends on svc/db", "not started".
func (r *Renderer) outcomeText(x *row) string {
	switch x.outcome {
	case "":
		return "not started"
	case openctl.OutcomeFailed:
		return "failed: " + errText(x.err)
	case openctl.OutcomeSkipped:
		return "skipped: " + r.skipReason(x.err)
	}
	return string(x.outcome)
}

// skipReason explains a skip: "depends on svc/db", or the error's text.
func (r *Renderer) skipReason(err error) string {
	if c, ok := skipCause(err); ok {
		return "depends on " + sanitize(r.names(c))
	}
	if isCanceled(err) {
		return "interrupted"
	}
	return errText(err)
}

// errText renders an error on one line ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return sanitize(err.Error())
}

// sanitize makes s safe to print on one line of a terminal: line breaks
// and tabs become spaces and other control characters (an ESC that would
// start an escape sequence) become '?'.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", " ")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return '?'
		}
		return r
	}, s)
}

// seconds renders a running resource's elapsed time: "12s", "3m05s".
func seconds(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d/time.Second)%60)
}

// duration renders a finished duration: "3.2s", "3m05s".
func duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d/time.Second)%60)
}
