package progress_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/progress"
	"github.com/openctl/openctl/refs"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t0.Add(d)
}

func svc(name string) manifest.ID {
	return manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: name}
}

func shortName(id manifest.ID) string { return "svc/" + id.Name }

func ev(at time.Duration, typ openctl.EventType, name string, mod ...func(*openctl.Event)) openctl.Event {
	e := openctl.Event{Time: t0.Add(at), Type: typ, ID: svc(name), Op: "apply"}
	for _, m := range mod {
		m(&e)
	}
	return e
}

func step(s string) func(*openctl.Event)             { return func(e *openctl.Event) { e.Step = s } }
func outcome(o openctl.Outcome) func(*openctl.Event) { return func(e *openctl.Event) { e.Outcome = o } }
func elapsed(d time.Duration) func(*openctl.Event)   { return func(e *openctl.Event) { e.Elapsed = d } }
func fail(err error) func(*openctl.Event)            { return func(e *openctl.Event) { e.Err = err } }
func retry(attempt int, d time.Duration) func(*openctl.Event) {
	return func(e *openctl.Event) { e.Attempt, e.Delay = attempt, d }
}

var (
	errUnavailable = errcode.New(errcode.Transient, "demo: 503 Service Unavailable")
	errDenied      = errcode.New(errcode.Unauthorized, "demo: permission denied (services.create on web-02)")
	skipWeb03      = &openctl.SkippedError{ID: svc("web-03"), Op: "apply", Cause: svc("web-02"), Err: errors.New("dependency failed")}
)

// events is an apply of three services: web-01 is created, web-02 is retried
// then fails, web-03 is skipped.
func events() []openctl.Event {
	return []openctl.Event{
		ev(0, openctl.EventStarted, "web-01"),
		ev(0, openctl.EventStarted, "web-02"),
		ev(1*time.Second, openctl.EventStep, "web-01", step("pulling image nginx:1.27")),
		ev(1500*time.Millisecond, openctl.EventRetrying, "web-02", retry(1, 1200*time.Millisecond), fail(errUnavailable)),
		ev(2*time.Second, openctl.EventWaiting, "web-01", step("waiting for health check")),
		ev(3200*time.Millisecond, openctl.EventSucceeded, "web-01", outcome(openctl.OutcomeCreated), elapsed(3200*time.Millisecond)),
		ev(4*time.Second, openctl.EventFailed, "web-02", outcome(openctl.OutcomeFailed), elapsed(4*time.Second), fail(errDenied)),
		ev(4*time.Second, openctl.EventSkipped, "web-03", outcome(openctl.OutcomeSkipped), fail(skipWeb03)),
	}
}

func report() *openctl.Report {
	return &openctl.Report{Duration: 4100 * time.Millisecond, Results: []openctl.Result{
		{ID: svc("web-01"), Outcome: openctl.OutcomeCreated, Duration: 3200 * time.Millisecond},
		{ID: svc("web-02"), Outcome: openctl.OutcomeFailed, Err: errDenied, Duration: 4 * time.Second},
		{ID: svc("web-03"), Outcome: openctl.OutcomeSkipped, Err: skipWeb03},
	}}
}

const failures = "" +
	"  ✗ svc/web-02: demo: permission denied (services.create on web-02) (UNAUTHORIZED)\n" +
	"    → check the credentials of the provider's context and their permissions; the error above may name what is missing\n" +
	"  ✗ svc/web-03: not attempted: depends on svc/web-02\n" +
	"    → fix svc/web-02 and re-run\n"

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want progress.Mode
	}{{"", progress.Auto}, {"auto", progress.Auto}, {"TTY", progress.TTY}, {" plain", progress.Plain}, {"quiet", progress.Quiet}} {
		t.Run(tc.in, func(t *testing.T) {
			m, err := progress.ParseMode(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, m)
		})
	}
	_, err := progress.ParseMode("fancy")
	require.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, `progress: unknown mode "fancy": want one of auto, tty, plain, quiet`)
}

func TestModeResolution(t *testing.T) {
	var b bytes.Buffer
	assert.Equal(t, progress.Plain, progress.New(&b, progress.Auto).Mode())
	assert.Equal(t, progress.Plain, progress.New(&b, "bogus").Mode())
	assert.Equal(t, progress.TTY, progress.New(&b, progress.TTY).Mode())
	assert.Equal(t, progress.Quiet, progress.New(&b, progress.Quiet).Mode())
	assert.Equal(t, progress.Plain, progress.New(nil, progress.Plain).Mode())

	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	assert.Equal(t, progress.Plain, progress.New(pw, progress.Auto).Mode(), "a pipe is not a terminal")
}

func TestPlain(t *testing.T) {
	var b bytes.Buffer
	clk := newClock()
	r := progress.New(&b, progress.Plain, progress.WithClock(clk.Now), progress.WithNames(shortName))
	r.Start("apply", []manifest.ID{svc("web-01"), svc("web-02"), svc("web-03")})
	for _, e := range events() {
		r.Observe(e)
	}
	r.Finish(report(), report().Err())
	assert.Equal(t, ""+
		"2026-11-30T10:00:00Z svc/web-01 started\n"+
		"2026-11-30T10:00:00Z svc/web-02 started\n"+
		"2026-11-30T10:00:01Z svc/web-01 step: pulling image nginx:1.27\n"+
		"2026-11-30T10:00:01Z svc/web-02 retrying (attempt 2 in 1.2s): demo: 503 Service Unavailable (TRANSIENT)\n"+
		"2026-11-30T10:00:02Z svc/web-01 waiting: waiting for health check\n"+
		"2026-11-30T10:00:03Z svc/web-01 created (3.2s)\n"+
		"2026-11-30T10:00:04Z svc/web-02 failed: demo: permission denied (services.create on web-02) (UNAUTHORIZED)\n"+
		"2026-11-30T10:00:04Z svc/web-03 skipped: depends on svc/web-02\n"+
		"Apply failed: 1 created, 0 updated, 0 unchanged, 1 failed, 1 skipped (4.1s)\n"+
		failures, b.String())
}

func TestPlainDefaultsAndSanitising(t *testing.T) {
	var b bytes.Buffer
	clk := newClock()
	r := progress.New(&b, progress.Plain, progress.WithClock(clk.Now))
	clk.Set(90 * time.Second)
	r.Observe(openctl.Event{Type: openctl.EventStep, ID: svc("web-01"), Op: "delete", Step: "line one\nline\x1b[2Jtwo"})
	r.Observe(openctl.Event{Type: openctl.EventSkipped, ID: svc("web-02"), Op: "delete", Err: &openctl.SkippedError{ID: svc("web-02"), Op: "delete", Err: context.Canceled}})
	r.Observe(openctl.Event{Type: openctl.EventSucceeded, ID: svc("web-01"), Op: "delete", Outcome: openctl.OutcomeDeleted, Elapsed: 75 * time.Second})
	r.Close()
	assert.Equal(t, ""+
		"2026-11-30T10:01:30Z service/web-01 step: line one line?[2Jtwo\n"+
		"2026-11-30T10:01:30Z service/web-02 skipped: interrupted\n"+
		"2026-11-30T10:01:30Z service/web-01 deleted (1m15s)\n", b.String())
}

func TestSummary(t *testing.T) {
	lockErr := errcode.New(errcode.Conflict, "state: locked by alice@ci-7 (pid 4242) since 2026-11-30T09:58:00Z")
	for _, tc := range []struct {
		name string
		op   string
		rep  *openctl.Report
		err  error
		want string
	}{
		{"apply", "apply", &openctl.Report{Duration: 12300 * time.Millisecond, Results: []openctl.Result{
			{ID: svc("a"), Outcome: openctl.OutcomeCreated}, {ID: svc("b"), Outcome: openctl.OutcomeCreated},
			{ID: svc("c"), Outcome: openctl.OutcomeUpdated}, {ID: svc("d"), Outcome: openctl.OutcomeUnchanged},
			{ID: svc("e"), Outcome: openctl.OutcomeUnchanged}, {ID: svc("f"), Outcome: openctl.OutcomeUnchanged},
		}}, nil, "Apply complete: 2 created, 1 updated, 3 unchanged, 0 failed (12.3s)\n"},
		{"apply with a prune", "apply", &openctl.Report{Duration: time.Second, Results: []openctl.Result{
			{ID: svc("a"), Outcome: openctl.OutcomeUnchanged}, {ID: svc("b"), Outcome: openctl.OutcomeDeleted},
		}}, nil, "Apply complete: 0 created, 0 updated, 1 unchanged, 1 deleted, 0 failed (1.0s)\n"},
		{"delete", "delete", &openctl.Report{Duration: 1200 * time.Millisecond, Results: []openctl.Result{
			{ID: svc("a"), Outcome: openctl.OutcomeDeleted}, {ID: svc("b"), Outcome: openctl.OutcomeDeleted}, {ID: svc("c"), Outcome: openctl.OutcomeDeleted},
		}}, nil, "Delete complete: 3 deleted, 0 failed (1.2s)\n"},
		{"long", "apply", &openctl.Report{Duration: 125 * time.Second}, nil, "Apply complete: 0 created, 0 updated, 0 unchanged, 0 failed (2m05s)\n"},
		{"lock held, nothing ran", "apply", nil, lockErr, "" +
			"Apply failed: 0 created, 0 updated, 0 unchanged, 0 failed (0.0s)\n" +
			"  ✗ state: locked by alice@ci-7 (pid 4242) since 2026-11-30T09:58:00Z (CONFLICT)\n" +
			"    → another openctl holds the state lock (named above): wait for it to finish, or run `openctl state force-unlock` if it crashed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			clk := newClock()
			r := progress.New(&b, progress.Plain, progress.WithClock(clk.Now))
			r.Start(tc.op, nil)
			r.Finish(tc.rep, tc.err)
			assert.Equal(t, tc.want, b.String())
		})
	}
}

func TestSummaryWithoutReport(t *testing.T) {
	var b bytes.Buffer
	clk := newClock()
	r := progress.New(&b, progress.Quiet, progress.WithClock(clk.Now), progress.WithNames(shortName))
	for _, e := range events() {
		r.Observe(e)
	}
	clk.Set(5 * time.Second)
	r.Finish(nil, errors.New("apply failed"))
	assert.Equal(t, failures, b.String(), "the failures come from the events")
}

func TestAdvice(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  openctl.Result
		want string
	}{
		{"unauthorized", openctl.Result{Err: errDenied}, "check the credentials of the provider's context and their permissions; the error above may name what is missing"},
		{"transient", openctl.Result{Err: fmt.Errorf("openctl: apply: %w", errUnavailable)}, "a temporary problem of the provider's service or of the network: re-run the same command; it resumes where it stopped (resources already applied are recorded in state)"},
		{"deadline", openctl.Result{Err: context.DeadlineExceeded}, "a temporary problem of the provider's service or of the network: re-run the same command; it resumes where it stopped (resources already applied are recorded in state)"},
		{"invalid with source", openctl.Result{Err: errcode.New(errcode.Invalid, "demo: spec.replicas: must be at least 1"), Source: manifest.Source{File: "services.yaml", Line: 12}}, "fix the manifest at services.yaml:12"},
		{"invalid", openctl.Result{Err: errcode.New(errcode.Invalid, "x")}, "fix the manifest at the file:line named above"},
		{"conflict", openctl.Result{Err: errcode.New(errcode.Conflict, "state: locked by bob")}, "another openctl holds the state lock (named above): wait for it to finish, or run `openctl state force-unlock` if it crashed"},
		{"already exists", openctl.Result{Err: errcode.New(errcode.AlreadyExists, "demo: service web-01 exists")}, "a resource openctl did not create has that name: rename yours or remove the existing one"},
		{"ref target not found", openctl.Result{Err: fmt.Errorf("openctl: x: %w", refs.TargetNotFound(svc("web"), refs.Ref{Path: "spec.db", Target: svc("db")}, ""))}, "the referenced resource does not exist: create it first or fix the reference"},
		{"ref field not found", openctl.Result{Err: refFieldNotFound(t)}, "the referenced resource has no value at that field (yet): check the field's name, or apply what sets it first"},
		{"other not found", openctl.Result{Err: errcode.New(errcode.NotFound, "demo: template ubuntu-24.04 not found")}, "something the resource needs was not found (named above): create it, or fix the manifest to name one that exists"},
		{"missing state passphrase", openctl.Result{Err: &openctl.StateError{Op: "unlock", Err: errcode.New(errcode.Invalid, "seal: no state passphrase")}, Source: manifest.Source{File: "sec.yaml", Line: 2}}, "the state needs its passphrase to seal secrets: set OPENCTL_STATE_PASSPHRASE to it, or OPENCTL_STATE_PASSPHRASE_FILE to a file holding it (a new state takes the one given)"},
		{"wrong state passphrase", openctl.Result{Err: &openctl.StateError{Op: "unlock", Err: errcode.New(errcode.Unauthorized, "seal: wrong passphrase")}}, "the state passphrase is wrong: set OPENCTL_STATE_PASSPHRASE (or OPENCTL_STATE_PASSPHRASE_FILE) to the passphrase this state was created with"},
		{"record failed", openctl.Result{Err: fmt.Errorf("openctl: apply: %w", &openctl.StateError{Op: "record", ID: svc("a"), Err: errcode.New(errcode.Invalid, "seal: no state passphrase")}), Source: manifest.Source{File: "sec.yaml", Line: 2}}, "the resource was applied but the state could not record it: fix the state problem named above (if it is the passphrase, set OPENCTL_STATE_PASSPHRASE), then re-run the same command"},
		{"state read unauthorized", openctl.Result{Err: &openctl.StateError{Op: "read", ID: svc("a"), Err: errcode.New(errcode.Unauthorized, "seal: wrong passphrase")}}, "the state refused access: check the state passphrase (OPENCTL_STATE_PASSPHRASE) and the state store's credentials; the error above says which"},
		{"state identify", openctl.Result{Err: &openctl.StateError{Op: "identify", Err: errors.New("disk full")}}, "the state store failed (named above): fix it, then re-run the same command"},
		{"canceled", openctl.Result{Err: fmt.Errorf("openctl: apply: %w", context.Canceled)}, "interrupted: re-run the same command to converge"},
		{"internal", openctl.Result{Err: errors.New("boom")}, "an unexpected error: re-run the same command, and report it with this message if it happens again"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, progress.Advice(tc.res)) })
	}
}

func TestFinishListing(t *testing.T) {
	var b bytes.Buffer
	multi := errors.Join(errcode.New(errcode.Invalid, "services.yaml:3:5: metadata.name: bad"), errcode.New(errcode.Invalid, "services.yaml:9:1: kind is empty"))
	rep := &openctl.Report{Duration: time.Second, Results: []openctl.Result{
		{ID: svc("a"), Outcome: openctl.OutcomeFailed, Err: multi},
		{ID: svc("b"), Outcome: openctl.OutcomeSkipped, Err: &openctl.SkippedError{ID: svc("b"), Op: "apply", Err: context.Canceled}},
		{ID: svc("c"), Outcome: openctl.OutcomeFailed},
		{ID: svc("d"), Outcome: openctl.OutcomeFailed, Err: errcode.New(errcode.AlreadyExists, "exists")},
	}}
	r := progress.New(&b, progress.Quiet, progress.WithNames(shortName), progress.WithAdvice(func(res openctl.Result) string {
		if errcode.Is(res.Err, errcode.AlreadyExists) {
			return "" // no advice line
		}
		return "custom: " + string(errcode.Of(res.Err))
	}))
	r.Finish(rep, rep.Err())
	assert.Equal(t, ""+
		"  ✗ svc/a: services.yaml:3:5: metadata.name: bad (INVALID_REQUEST)\n"+
		"    services.yaml:9:1: kind is empty (INVALID_REQUEST)\n"+
		"    → custom: INVALID_REQUEST\n"+
		"  ✗ svc/b: not attempted: interrupted\n"+
		"    → custom: CANCELLED\n"+
		"  ✗ svc/c: failed\n"+
		"  ✗ svc/d: exists (ALREADY_EXISTS)\n", b.String())
}

func TestQuiet(t *testing.T) {
	var b bytes.Buffer
	r := progress.New(&b, progress.Quiet, progress.WithNames(shortName))
	r.Start("apply", []manifest.ID{svc("web-01")})
	for _, e := range events() {
		r.Observe(e)
		assert.Empty(t, b.String())
	}
	r.Finish(report(), report().Err())
	assert.Equal(t, failures, b.String())

	b.Reset()
	r = progress.New(&b, progress.Quiet)
	r.Observe(ev(0, openctl.EventSucceeded, "web-01", outcome(openctl.OutcomeCreated)))
	r.Finish(&openctl.Report{Results: []openctl.Result{{ID: svc("web-01"), Outcome: openctl.OutcomeCreated}}}, nil)
	assert.Empty(t, b.String(), "nothing failed: nothing to say")
}

func TestFinishAndCloseOnce(t *testing.T) {
	var b bytes.Buffer
	r := progress.New(&b, progress.Plain)
	r.Finish(&openctl.Report{}, nil)
	n := b.Len()
	r.Finish(&openctl.Report{}, nil)
	r.Observe(ev(0, openctl.EventStarted, "web-01"))
	r.Start("apply", []manifest.ID{svc("x")})
	r.Refresh()
	r.Close()
	r.Close()
	assert.Equal(t, n, b.Len())

	r = progress.New(&b, progress.TTY, progress.WithInterval(time.Millisecond))
	r.Observe(ev(0, openctl.EventStarted, "web-01"))
	r.Close()
	n = b.Len()
	r.Finish(nil, nil)
	assert.Equal(t, n, b.Len(), "Finish after Close prints nothing")
}

func TestWriteErrorStopsWriting(t *testing.T) {
	w := &failWriter{}
	r := progress.New(w, progress.Plain)
	r.Observe(ev(0, openctl.EventStarted, "web-01"))
	r.Observe(ev(0, openctl.EventStarted, "web-02"))
	r.Finish(nil, nil)
	assert.Equal(t, 1, w.calls)
}

type failWriter struct{ calls int }

func (w *failWriter) Write([]byte) (int, error) { w.calls++; return 0, errors.New("broken pipe") }

// TestTTY drives the live view by hand (no background redraw) and checks
// each frame.
func TestTTY(t *testing.T) {
	var b bytes.Buffer
	clk := newClock()
	r := progress.New(&b, progress.TTY, progress.WithClock(clk.Now), progress.WithInterval(0), progress.WithWidth(80), progress.WithNames(shortName))
	r.Start("apply", []manifest.ID{svc("web-01"), svc("web-02"), svc("web-03")})
	frame := func() string {
		t.Helper()
		n := b.Len()
		r.Refresh()
		return b.String()[n:]
	}

	assert.Equal(t, ""+
		"\r\x1b[2K· svc/web-01          pending\n"+
		"\r\x1b[2K· svc/web-02          pending\n"+
		"\r\x1b[2K· svc/web-03          pending\n", frame())
	assert.Empty(t, frame(), "nothing changed: no redraw")

	evs := events()
	for _, e := range evs[:4] { // started ×2, step, retrying
		r.Observe(e)
	}
	clk.Set(2300 * time.Millisecond) // spinner frame 23 % 10 = 3
	assert.Equal(t, ""+
		"\x1b[3A"+
		"\r\x1b[2K⠸ svc/web-01      2s  applying: pulling image nginx:1.27\n"+
		"\r\x1b[2K⠸ svc/web-02      2s  retrying (attempt 2 in 0.4s): demo: 503 Service Unavaila…\n"+
		"\r\x1b[2K· svc/web-03          pending\n", frame())

	clk.Set(2800 * time.Millisecond) // the retry is due; spinner frame 8
	r.Observe(evs[4])                // web-01 waiting
	assert.Equal(t, ""+
		"\x1b[3A"+
		"\r\x1b[2K⠇ svc/web-01      2s  waiting: waiting for health check\n"+
		"\r\x1b[2K⠇ svc/web-02      2s  retrying (attempt 2): demo: 503 Service Unavailable (TRA…\n"+
		"\r\x1b[2K· svc/web-03          pending\n", frame(), "the retry countdown ended")

	clk.Set(3200 * time.Millisecond) // spinner frame 2
	r.Observe(evs[5])                // web-01 created: its final line goes above the live lines
	assert.Equal(t, ""+
		"\x1b[3A"+
		"\r\x1b[2K✓ svc/web-01    3.2s  created\n"+
		"\r\x1b[2K⠹ svc/web-02      3s  retrying (attempt 2): demo: 503 Service Unavailable (TRA…\n"+
		"\r\x1b[2K· svc/web-03          pending\n", frame())

	clk.Set(4 * time.Second)
	for _, e := range evs[6:] {
		r.Observe(e)
	}
	r.Finish(report(), report().Err())
	assert.Equal(t, ""+
		"\x1b[2A"+
		"\r\x1b[2K✗ svc/web-02    4.0s  failed: demo: permission denied (services.create on web-…\n"+
		"\r\x1b[2K- svc/web-03          skipped: depends on svc/web-02\n"+
		"\n"+
		"Apply failed: 1 created, 0 updated, 0 unchanged, 1 failed, 1 skipped (4.1s)\n"+
		failures, b.String()[strings.LastIndex(b.String(), "\x1b[2A"):])
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "\x1b[3A"), "\x1b[2A")
		l = strings.TrimPrefix(l, "\r\x1b[2K")
		if !strings.Contains(l, "→") && !strings.HasPrefix(l, "  ✗") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), 79, l)
		}
	}
}

// TestTTYFinishWithoutEvents shows the final lines come from the report
// when the events were not observed, and that resources never reached are
// "not started".
func TestTTYFinishWithoutEvents(t *testing.T) {
	var b bytes.Buffer
	r := progress.New(&b, progress.TTY, progress.WithInterval(0), progress.WithNames(shortName))
	r.Start("delete", []manifest.ID{svc("a"), svc("b")})
	r.Refresh()
	r.Finish(&openctl.Report{Duration: time.Second, Results: []openctl.Result{{ID: svc("a"), Outcome: openctl.OutcomeDeleted, Duration: 500 * time.Millisecond}}}, nil)
	out := b.String()
	assert.Contains(t, out, "\x1b[2A\r\x1b[2K✓ svc/a    0.5s  deleted\n\r\x1b[2K- svc/b          not started\n\nDelete complete: 1 deleted, 0 failed (1.0s)\n")
}

// TestTTYBackground lets the redraw goroutine draw with a real interval.
func TestTTYBackground(t *testing.T) {
	var b syncBuffer
	clk := newClock()
	r := progress.New(&b, progress.TTY, progress.WithClock(clk.Now), progress.WithInterval(time.Millisecond), progress.WithNames(shortName))
	r.Observe(ev(0, openctl.EventStarted, "web-01"))
	r.Observe(ev(0, openctl.EventStep, "web-01", step("pulling")))
	require.Eventually(t, func() bool { return strings.Contains(b.String(), "applying: pulling") }, 5*time.Second, time.Millisecond)
	r.Finish(nil, nil)
	assert.Contains(t, b.String(), "Apply complete")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestObserveConcurrent sends events from many goroutines while the view
// redraws; run it with -race.
func TestObserveConcurrent(t *testing.T) {
	for _, mode := range []progress.Mode{progress.Plain, progress.TTY, progress.Quiet} {
		t.Run(string(mode), func(t *testing.T) {
			var b bytes.Buffer // written only by the Renderer, read after Finish
			r := progress.New(&b, mode, progress.WithInterval(time.Millisecond), progress.WithWidth(60))
			const workers, perWorker = 16, 20
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWorker {
						name := fmt.Sprintf("svc-%d-%d", w, i)
						r.Observe(openctl.Event{Type: openctl.EventStarted, ID: svc(name), Op: "apply"})
						r.Observe(openctl.Event{Type: openctl.EventStep, ID: svc(name), Op: "apply", Step: "pulling"})
						r.Refresh()
						r.Observe(openctl.Event{Type: openctl.EventSucceeded, ID: svc(name), Op: "apply", Outcome: openctl.OutcomeCreated})
					}
				}()
			}
			wg.Wait()
			r.Finish(nil, nil)
			out := b.String()
			switch mode {
			case progress.Plain:
				assert.Equal(t, workers*perWorker*3+1, strings.Count(out, "\n"))
			case progress.TTY:
				assert.Equal(t, workers*perWorker, strings.Count(out, "✓ "))
			case progress.Quiet:
				assert.Empty(t, out)
			}
			if mode != progress.Quiet {
				assert.Contains(t, out, fmt.Sprintf("Apply complete: %d created, 0 updated, 0 unchanged, 0 failed", workers*perWorker))
			}
		})
	}
}

// TestTTYInterleave: a line written to another stream of the same
// terminal (a log line on standard error) while the view is live erases
// the live lines, is written, and the view is drawn again below it — the
// view does not move its cursor up over the line. Without live lines, or
// in other modes, the writer writes straight through.
func TestTTYInterleave(t *testing.T) {
	var b bytes.Buffer // the terminal: both streams end up on it
	r := progress.New(&b, progress.TTY, progress.WithClock(newClock().Now), progress.WithInterval(0), progress.WithWidth(80), progress.WithNames(shortName))
	logw := r.Interleave(&b)
	_, err := logw.Write([]byte("before\n"))
	require.NoError(t, err)
	r.Start("apply", []manifest.ID{svc("web-01"), svc("web-02")})
	r.Refresh()
	n := b.Len()
	_, err = logw.Write([]byte("level=WARN msg=retrying\n"))
	require.NoError(t, err)
	assert.Equal(t, ""+
		"\x1b[2A\r\x1b[J"+
		"level=WARN msg=retrying\n"+
		"\r\x1b[2K· svc/web-01          pending\n"+
		"\r\x1b[2K· svc/web-02          pending\n", b.String()[n:])
	r.Finish(&openctl.Report{}, nil)
	n = b.Len()
	_, err = logw.Write([]byte("after\n"))
	require.NoError(t, err)
	assert.Equal(t, "after\n", b.String()[n:])
	assert.True(t, strings.HasPrefix(b.String(), "before\n"))

	// Closed with live lines on the screen: they are erased, not drawn again.
	var c bytes.Buffer
	closed := progress.New(&c, progress.TTY, progress.WithInterval(0), progress.WithNames(shortName))
	closed.Start("apply", []manifest.ID{svc("web-01")})
	closed.Refresh()
	closed.Close()
	n = c.Len()
	_, err = closed.Interleave(&c).Write([]byte("late\n"))
	require.NoError(t, err)
	assert.Equal(t, "\x1b[1A\r\x1b[Jlate\n", c.String()[n:])

	var p bytes.Buffer
	plain := progress.New(&p, progress.Plain)
	plain.Start("apply", []manifest.ID{svc("web-01")})
	_, err = plain.Interleave(&p).Write([]byte("x\n"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", p.String())
}

// refFieldNotFound resolves a $ref to a field its target lacks.
func refFieldNotFound(t *testing.T) error {
	t.Helper()
	web := &manifest.Resource{APIVersion: svc("web").APIVersion, Kind: svc("web").Kind, Metadata: manifest.Metadata{Name: "web"},
		Spec: map[string]any{"db": refs.Marker(svc("db"), "status.ip")}}
	_, err := refs.Resolve(t.Context(), refs.GetterFunc(func(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
		return &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name}}, nil
	}), web)
	require.Error(t, err)
	return err
}
