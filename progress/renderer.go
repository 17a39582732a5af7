package progress

import (
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
)

// DefaultInterval is how often the TTY view is redrawn by default.
const DefaultInterval = 100 * time.Millisecond

// Option configures a [Renderer].
type Option func(*Renderer)

// WithClock sets the clock used for elapsed times, spinners and events
// without a time; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(r *Renderer) {
		if now != nil {
			r.now = now
		}
	}
}

// WithInterval sets how often the TTY view is redrawn (default
// [DefaultInterval]). A duration of zero or less turns off the background
// redraw: the view is drawn only by [Renderer.Refresh] and at the end.
func WithInterval(d time.Duration) Option {
	return func(r *Renderer) { r.interval = d }
}

// WithWidth fixes the width lines are truncated to. By default it is the
// terminal's width, read at every redraw, or 80 when the writer is not a
// terminal.
func WithWidth(n int) Option {
	return func(r *Renderer) { r.width = n }
}

// WithNames sets how resources are named ("svc/web-01"); the default is
// the kind in lower case, a slash and the name.
func WithNames(fn func(manifest.ID) string) Option {
	return func(r *Renderer) {
		if fn != nil {
			r.names = fn
		}
	}
}

// WithAdvice sets the function that says what to do about a failure in
// the listing [Renderer.Finish] prints; the default is [Advice]. It is not
// called for resources skipped because a dependency failed.
func WithAdvice(fn func(openctl.Result) string) Option {
	return func(r *Renderer) {
		if fn != nil {
			r.advice = fn
		}
	}
}

// Renderer shows the progress of an apply or delete: it receives the
// engine's events ([Renderer.Observe]) and, when the operation ends,
// prints a summary and what to do about each failure
// ([Renderer.Finish]). A Renderer is safe for concurrent use; it writes to
// its writer from one goroutine at a time.
type Renderer struct {
	w        io.Writer
	mode     Mode // resolved: TTY, Plain or Quiet
	fd       int  // w's descriptor, when isTerm
	isTerm   bool
	now      func() time.Time
	interval time.Duration
	width    int
	names    func(manifest.ID) string
	advice   func(openctl.Result) string

	mu      sync.Mutex // guards the fields below and every write to w
	op      string
	began   time.Time
	rows    []*row
	byID    map[manifest.ID]*row
	live    []string      // the live lines last drawn (TTY)
	stop    chan struct{} // closed to stop the redraw goroutine; nil until it starts
	done    chan struct{} // closed when the redraw goroutine has returned
	closed  bool
	werr    error                          // the first write error; nothing is written after it
	nameMax int                            // the widest name, for alignment
	final   map[manifest.ID]openctl.Result // the results Finish was given
}

// New returns a Renderer writing to w in the given mode. Auto (or an
// unknown mode) becomes TTY when w is an *os.File that is a terminal and
// the TERM environment variable is not "dumb", Plain otherwise. In TTY mode
// a goroutine redraws the view from the first event until
// [Renderer.Finish] or [Renderer.Close]; call one of them.
func New(w io.Writer, mode Mode, opts ...Option) *Renderer {
	r := &Renderer{
		w:        w,
		now:      time.Now,
		interval: DefaultInterval,
		names:    defaultName,
		advice:   Advice,
		byID:     map[manifest.ID]*row{},
	}
	if w == nil {
		r.w = io.Discard
	}
	r.fd, r.isTerm = terminal(r.w)
	for _, o := range opts {
		o(r)
	}
	r.mode = resolve(mode, r.isTerm)
	return r
}

func defaultName(id manifest.ID) string { return strings.ToLower(id.Kind) + "/" + id.Name }

// Mode returns the mode the Renderer runs in: TTY, Plain or Quiet.
func (r *Renderer) Mode() Mode { return r.mode }

// Start lists the resources an operation ("apply" or "delete") will work
// on, so that the TTY view shows them as pending before their first event.
// Calling it is optional; it prints nothing in the Plain and Quiet modes.
func (r *Renderer) Start(op string, ids []manifest.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if op != "" {
		r.op = op
	}
	r.begin()
	for _, id := range ids {
		r.row(id)
	}
}

// Observe records an event; pass it to openctl.WithObserver. In Plain mode
// it writes the event's line at once; in TTY mode the next redraw shows
// it. It does nothing after Finish or Close.
func (r *Renderer) Observe(ev openctl.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if r.op == "" && ev.Op != "" {
		r.op = ev.Op
	}
	if ev.Time.IsZero() {
		ev.Time = r.now()
	}
	r.begin()
	r.row(ev.ID).apply(ev)
	if r.mode == Plain {
		r.write(r.plainLine(ev))
	}
}

// Refresh redraws the TTY view now, if it changed. It is what the
// background redraw calls at every interval; an embedder that turned that
// off with WithInterval(0) calls it itself. It does nothing in the other
// modes.
func (r *Renderer) Refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.mode != TTY {
		return
	}
	r.draw(false)
}

// Finish ends the view and prints how the operation went: in TTY mode the
// final line of every resource (✓ done, ✗ failed, - skipped); then, except
// in Quiet mode, a summary such as
//
//	Apply complete: 2 created, 1 updated, 3 unchanged, 0 failed (12.3s)
//
// and, for each failed or skipped resource, the reason and what to do:
//
//	✗ svc/web-02: openctl: apply Service/web-02: ... (TRANSIENT)
//	  → a temporary problem of the provider's service or of the network: ...
//
// rep is the operation's report (nil if it did not run); err is its error,
// listed on its own when no resource failed (a state lock held, a
// manifest that does not decode). Finish does nothing after Close or a
// first Finish.
func (r *Renderer) Finish(rep *openctl.Report, err error) {
	if !r.shutdown() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	results := r.results(rep)
	if r.mode == TTY {
		r.draw(true)
	}
	r.write(r.report(rep, results, err))
}

// Close stops the view without printing a summary. It is safe to call
// more than once, and after Finish.
func (r *Renderer) Close() { r.shutdown() }

// shutdown marks the Renderer closed and stops the redraw goroutine. It
// reports whether this call closed it.
func (r *Renderer) shutdown() bool {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	r.closed = true
	stop, done := r.stop, r.done
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return true
}

// begin notes the start time and, in TTY mode, starts the redraw
// goroutine. r.mu is held.
func (r *Renderer) begin() {
	if r.began.IsZero() {
		r.began = r.now()
	}
	if r.mode != TTY || r.interval <= 0 || r.stop != nil {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.redraw(r.stop, r.done, r.interval)
}

func (r *Renderer) redraw(stop, done chan struct{}, every time.Duration) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.Refresh()
		}
	}
}

// row returns id's row, adding it if it is new. r.mu is held.
func (r *Renderer) row(id manifest.ID) *row {
	if x, ok := r.byID[id]; ok {
		return x
	}
	x := &row{id: id, name: sanitize(r.names(id)), op: r.op}
	r.byID[id] = x
	r.rows = append(r.rows, x)
	r.nameMax = max(r.nameMax, len([]rune(x.name)))
	return x
}

// write writes s unless an earlier write failed. r.mu is held.
func (r *Renderer) write(s string) {
	if s == "" || r.werr != nil {
		return
	}
	_, r.werr = io.WriteString(r.w, s)
}

// size returns the width lines are cut to and the terminal's height (0
// when unknown).
func (r *Renderer) size() (width, height int) {
	width = r.width
	if r.isTerm {
		if w, h, err := term.GetSize(r.fd); err == nil {
			if width <= 0 {
				width = w
			}
			height = h
		}
	}
	if width <= 0 {
		width = 80
	}
	return width, height
}
