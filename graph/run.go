package graph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/openctl/openctl/errcode"
)

// Status is the outcome of one node in a Run.
type Status int

const (
	// Pending: the node has not finished. Run never returns it.
	Pending Status = iota
	// Succeeded: the node's function returned nil.
	Succeeded
	// Failed: the node's function returned an error or panicked.
	Failed
	// Skipped: the node did not run, because a dependency failed or the
	// context was cancelled first.
	Skipped
)

var statusNames = [...]string{"pending", "succeeded", "failed", "skipped"}

// String returns the status name, e.g. "succeeded".
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// EventType says what happened to a node.
type EventType int

const (
	// EventStarted: the node's function is about to be called.
	EventStarted EventType = iota
	// EventSucceeded: the function returned nil.
	EventSucceeded
	// EventFailed: the function returned an error or panicked.
	EventFailed
	// EventSkipped: the node will not run.
	EventSkipped
)

var eventNames = [...]string{"started", "succeeded", "failed", "skipped"}

// String returns the event name, e.g. "started".
func (t EventType) String() string {
	if t >= 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is a progress report from Run. Every node gets exactly one terminal
// event (EventSucceeded, EventFailed or EventSkipped); a node that runs also
// gets an EventStarted before it.
type Event[K cmp.Ordered] struct {
	Type     EventType
	Node     K
	Time     time.Time     // when it happened; for a finished call, when it returned
	Duration time.Duration // EventSucceeded, EventFailed: how long the function ran
	Err      error         // EventFailed: the function's error; EventSkipped: why, as in Result.Err
	Cause    K             // EventSkipped: the failed dependency, or the zero K if the context was cancelled
}

// Result is the outcome of one node.
type Result[K cmp.Ordered] struct {
	Node   K
	Status Status
	// Err is the function's error (or a *PanicError) when Failed. When
	// Skipped it is a *SkipError naming the failed dependency, or, if the
	// context was cancelled before the node could start, an error wrapping
	// ctx.Err().
	Err      error
	Start    time.Time     // when the function was called; zero if it was not
	Duration time.Duration // how long the function ran
}

// SkipError is the Result.Err of a node skipped because a dependency, direct
// or transitive, failed. Cause is that dependency and Err its error.
type SkipError[K cmp.Ordered] struct {
	Node, Cause K
	Err         error
}

// Error names the skipped node, the failed dependency and its error.
func (e *SkipError[K]) Error() string {
	return fmt.Sprintf("graph: skipped %v: dependency %v failed: %v", e.Node, e.Cause, e.Err)
}

// Unwrap returns the dependency's error.
func (e *SkipError[K]) Unwrap() error { return e.Err }

// PanicError is the error of a node whose function panicked. It matches
// errcode.Internal with errors.Is, and, when the panic value is an error,
// that error too.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

// Error includes the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("graph: panic: %v", e.Value) }

// Is reports whether target is errcode.Internal: a panic is a bug.
func (e *PanicError) Is(target error) bool { return target == errcode.Internal }

// Unwrap returns errcode.Internal, so that errcode.Of classifies the error,
// followed by the panic value if it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{errcode.Internal, err}
	}
	return []error{errcode.Internal}
}

// errGoexit is the error of a node whose function called runtime.Goexit
// (for example through t.FailNow) instead of returning.
var errGoexit = fmt.Errorf("graph: function called runtime.Goexit: %w", errcode.Internal)

// RunOptions configures Run.
type RunOptions[K cmp.Ordered] struct {
	// Concurrency is the most function calls in flight at once; 0 or less
	// means 1.
	Concurrency int
	// OnEvent, if not nil, receives progress events. Calls are
	// serialised: OnEvent is never called from two goroutines at once,
	// and never after Run returns. EventStarted for a node is delivered
	// before its function is called. OnEvent runs while Run's scheduler
	// is locked, so it should be quick, must not wait for a node's
	// function to do anything, and must not panic.
	OnEvent func(Event[K])
}

// Run calls fn once for every node, at most opts.Concurrency calls at a
// time, and calls it for a node only after fn succeeded for all of its
// dependencies. It passes ctx to every call.
//
// If the graph is cyclic, Run returns (nil, *CycleError) without calling
// fn. A nil fn yields an error matching errcode.Invalid.
//
// When fn fails for a node (returns an error, panics or calls
// runtime.Goexit), every node that depends on it, directly or transitively,
// is skipped with a *SkipError; other nodes keep running. A panic is
// recovered as a *PanicError. Once ctx is done, Run starts nothing more:
// the nodes that have not started are skipped with an error wrapping
// ctx.Err() (Run notices before starting a node and whenever a call
// returns), and Run returns once the calls in flight have returned. Run
// leaves no goroutine behind.
//
// The map has exactly one Result for every node. The error is nil if every
// node succeeded, and otherwise errors.Join of the failed nodes' errors, in
// node order, followed by ctx.Err() if cancellation skipped any node.
//
// Among the nodes ready to start, Run starts the one with the greatest
// height (the number of nodes on the longest path from it to a node with no
// dependents) first, breaking ties by the smallest key.
func (g *Graph[K]) Run(ctx context.Context, opts RunOptions[K], fn func(ctx context.Context, node K) error) (map[K]Result[K], error) {
	if fn == nil {
		return nil, fmt.Errorf("graph: Run: nil function: %w", errcode.Invalid)
	}
	order := g.kahn()
	if len(order) < len(g.keys) {
		return nil, g.cycleError()
	}
	r := newRunner(g, opts, fn, order)
	r.run(ctx)
	return r.results(ctx)
}

// phase is where a node is in a run.
type phase uint8

const (
	phaseWaiting phase = iota // waiting for dependencies
	phaseReady                // in the ready queue
	phaseRunning              // fn called
	phaseDone                 // has its Result
)

// outcome is how one call of fn went.
type outcome struct {
	err   error
	start time.Time
	dur   time.Duration
}

// runner is the state of one Run. It has no coordinator goroutine: each of
// up to limit workers takes the best ready node, calls fn without holding
// mu, then records the outcome and takes the next node, all under mu. Idle
// workers wait on wake.
type runner[K cmp.Ordered] struct {
	// Read-only during the run.
	g       *Graph[K]
	fn      func(context.Context, K) error
	onEvent func(Event[K])
	limit   int   // opts.Concurrency, at least 1
	order   []int // a topological order
	height  []int // nodes on the longest path from a node to a sink

	wg sync.WaitGroup // workers

	mu       sync.Mutex // guards everything below, and calls onEvent
	wake     sync.Cond  // signalled when a node is ready or the run is over; L is &mu
	waiting  []int      // dependencies not yet succeeded
	phase    []phase
	res      []Result[K]
	ready    queue[K]
	left     int   // nodes without a Result
	inflight int   // fn calls not yet recorded
	idle     int   // workers waiting on wake
	failed   []int // failed nodes
	stopped  bool  // ctx is done: start nothing more
	canceled bool  // ctx was done while nodes had not started
	scratch  []int
}

func newRunner[K cmp.Ordered](g *Graph[K], opts RunOptions[K], fn func(context.Context, K) error, order []int) *runner[K] {
	n := len(g.keys)
	r := &runner[K]{
		g:       g,
		fn:      fn,
		onEvent: opts.OnEvent,
		limit:   max(opts.Concurrency, 1),
		order:   order,
		height:  make([]int, n),
		waiting: make([]int, n),
		phase:   make([]phase, n),
		res:     make([]Result[K], n),
		left:    n,
	}
	r.wake.L = &r.mu
	for i := n - 1; i >= 0; i-- { // dependents first
		v := order[i]
		h := 0
		for _, w := range g.out[v] {
			h = max(h, r.height[w])
		}
		r.height[v] = h + 1
	}
	for v := range n {
		r.res[v].Node = g.keys[v]
		r.waiting[v] = len(g.in[v])
		if r.waiting[v] == 0 {
			r.phase[v] = phaseReady
			r.ready.items = append(r.ready.items, r.entry(v))
		}
	}
	r.ready.init()
	return r
}

// entry returns v's entry in the ready queue: greatest height first, then
// smallest key.
func (r *runner[K]) entry(v int) entry[K] {
	return entry[K]{prio: -r.height[v], key: r.g.keys[v], node: v}
}

// run starts the workers and returns once they have all returned, which
// is when every node has a Result.
func (r *runner[K]) run(ctx context.Context) {
	for range min(r.limit, len(r.res)) {
		r.wg.Add(1)
		go r.work(ctx)
	}
	r.wg.Wait()
}

// work is one worker: it runs ready nodes until no node is left.
func (r *runner[K]) work(ctx context.Context) {
	defer r.wg.Done()
	r.mu.Lock()
	for {
		v, ok := r.next(ctx)
		if !ok {
			break
		}
		r.mu.Unlock()
		o := r.call(ctx, v)
		r.mu.Lock()
		r.finish(ctx, v, o)
	}
	r.mu.Unlock()
}

// next takes the best ready node and reports EventStarted for it, waiting
// while nothing is ready but calls in flight may make something ready. It
// reports false when the run is over. If ctx is done, next first skips
// every node that has not started. r.mu must be held.
func (r *runner[K]) next(ctx context.Context) (int, bool) {
	for {
		r.checkDone(ctx)
		if r.ready.len() > 0 {
			break
		}
		if r.left == 0 || r.inflight == 0 {
			// Over. (Nodes left but none ready or in flight cannot
			// happen in a DAG.)
			r.wake.Broadcast()
			return 0, false
		}
		r.idle++
		r.wake.Wait()
		r.idle--
	}
	v := r.ready.pop()
	if r.ready.len() > 0 && r.idle > 0 {
		r.wake.Signal() // that worker signals the next one if there is still more
	}
	r.phase[v] = phaseRunning
	r.inflight++
	if r.onEvent != nil {
		r.onEvent(Event[K]{Type: EventStarted, Node: r.g.keys[v], Time: time.Now()})
	}
	return v, true
}

// call runs fn for node v, turning a panic into a *PanicError. If fn calls
// runtime.Goexit, call records the node as failed and hands the rest of the
// worker's job to a new worker, since this goroutine is about to end.
func (r *runner[K]) call(ctx context.Context, v int) (o outcome) {
	o.start = time.Now()
	returned := false
	defer func() {
		o.dur = time.Since(o.start)
		if p := recover(); p != nil {
			o.err = &PanicError{Value: p, Stack: debug.Stack()}
		} else if !returned {
			o.err = errGoexit
			r.mu.Lock()
			r.finish(ctx, v, o)
			r.mu.Unlock()
			r.wg.Add(1)
			go r.work(ctx)
		}
	}()
	o.err = r.fn(ctx, r.g.keys[v])
	returned = true
	return o
}

// emit delivers e to OnEvent, if there is one. The hot paths check
// r.onEvent themselves so as not to build events nobody reads.
func (r *runner[K]) emit(e Event[K]) {
	if r.onEvent != nil {
		r.onEvent(e)
	}
}

// finish records the outcome of node v's call. If ctx is done, the nodes
// that have not started are skipped first, as cancelled rather than as
// dependents of a failed node. r.mu must be held.
func (r *runner[K]) finish(ctx context.Context, v int, o outcome) {
	r.checkDone(ctx)
	r.inflight--
	r.left--
	r.phase[v] = phaseDone
	res := &r.res[v]
	res.Start, res.Duration, res.Err = o.start, o.dur, o.err
	if o.err != nil {
		res.Status = Failed
		r.failed = append(r.failed, v)
		r.emit(Event[K]{Type: EventFailed, Node: res.Node, Time: o.start.Add(o.dur), Duration: o.dur, Err: o.err})
		r.skipDependents(v, o.err)
		return
	}
	res.Status = Succeeded
	if r.onEvent != nil {
		r.onEvent(Event[K]{Type: EventSucceeded, Node: res.Node, Time: o.start.Add(o.dur), Duration: o.dur})
	}
	for _, w := range r.g.out[v] {
		// A skipped node's count is far below zero: it never reaches zero.
		if r.waiting[w]--; r.waiting[w] == 0 {
			r.phase[w] = phaseReady
			r.ready.push(r.entry(w))
		}
	}
}

// skipDependents skips every node that depends, directly or transitively,
// on the failed node v. A node that already has a Result was skipped
// earlier, and so were its dependents.
func (r *runner[K]) skipDependents(v int, err error) {
	cause := r.g.keys[v]
	now := time.Now()
	queue := append(r.scratch[:0], v)
	for i := 0; i < len(queue); i++ {
		for _, w := range r.g.out[queue[i]] {
			if r.phase[w] == phaseDone {
				continue
			}
			// w has a failed dependency, so it never became ready.
			r.skip(w, &SkipError[K]{Node: r.g.keys[w], Cause: cause, Err: err}, cause, now)
			queue = append(queue, w)
		}
	}
	r.scratch = queue
}

// checkDone stops the run if ctx is done. r.mu must be held.
func (r *runner[K]) checkDone(ctx context.Context) {
	if r.stopped {
		return
	}
	select {
	case <-ctx.Done():
		r.stop(ctx.Err())
	default:
	}
}

// stop skips every node that has not started, in topological order, and
// stops the run from starting any more. r.mu must be held.
func (r *runner[K]) stop(ctxErr error) {
	r.stopped = true
	var zero K
	now := time.Now()
	for _, v := range r.order {
		if p := r.phase[v]; p == phaseWaiting || p == phaseReady {
			r.canceled = true
			r.skip(v, fmt.Errorf("graph: skipped %v: %w", r.g.keys[v], ctxErr), zero, now)
		}
	}
	r.ready.items = r.ready.items[:0]
}

func (r *runner[K]) skip(v int, err error, cause K, now time.Time) {
	r.phase[v] = phaseDone
	r.waiting[v] = math.MinInt32 // never reaches zero
	r.left--
	res := &r.res[v]
	res.Status, res.Err = Skipped, err
	r.emit(Event[K]{Type: EventSkipped, Node: res.Node, Time: now, Err: err, Cause: cause})
}

func (r *runner[K]) results(ctx context.Context) (map[K]Result[K], error) {
	m := make(map[K]Result[K], len(r.res))
	for _, res := range r.res {
		m[res.Node] = res
	}
	if len(r.failed) == 0 && !r.canceled {
		return m, nil
	}
	slices.SortFunc(r.failed, func(a, b int) int { return cmp.Compare(r.g.keys[a], r.g.keys[b]) })
	errs := make([]error, 0, len(r.failed)+1)
	for _, v := range r.failed {
		errs = append(errs, r.res[v].Err)
	}
	if r.canceled {
		errs = append(errs, ctx.Err())
	}
	return m, errors.Join(errs...)
}
