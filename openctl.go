package openctl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// Engine applies, plans and deletes resources through a provider registry,
// recording what it did in a state store. Create one with New. An Engine is
// safe for concurrent use; operations that change things (Apply, Delete)
// take the store's lock, so two of them on the same store do not overlap.
type Engine struct {
	reg         *registry.Registry
	store       state.Store
	concurrency int
	log         *slog.Logger
	observer    func(Event)
	retryPolicy backoff.Policy
	ready       ReadyPolicy
	lockWait    time.Duration
	maxDepth    int
	pending     []registry.Provider // from WithProviders, registered by New

	obsMu sync.Mutex // serialises observer calls
}

// ReadyPolicy controls how Apply waits for a $ref's target to report a
// field its kind declares (registry.Kind.Fields) but does not have yet,
// such as a new VM's status.sshHostKey before its guest agent answers: it
// reads the target again with capped exponential backoff until the field
// is there or Timeout passes.
type ReadyPolicy struct {
	Timeout time.Duration // default 10m
	Initial time.Duration // first poll interval, default 250ms
	Max     time.Duration // longest poll interval, default 10s
}

func (p ReadyPolicy) withDefaults() ReadyPolicy {
	if p.Timeout <= 0 {
		p.Timeout = 10 * time.Minute
	}
	if p.Initial <= 0 {
		p.Initial = 250 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 10 * time.Second
	}
	return p
}

// DefaultConcurrency is the number of resources an Engine works on at once
// unless WithConcurrency says otherwise.
const DefaultConcurrency = 4

// Option configures an Engine.
type Option func(*Engine) error

// WithProviders registers providers in the engine's registry (its own, or
// the one WithRegistry gives, whichever order the options come in).
func WithProviders(ps ...registry.Provider) Option {
	return func(e *Engine) error { e.pending = append(e.pending, ps...); return nil }
}

// WithRegistry makes the engine use reg (shared with the caller) instead of
// a registry of its own.
func WithRegistry(reg *registry.Registry) Option {
	return func(e *Engine) error {
		if reg == nil {
			return errcode.New(errcode.Invalid, "openctl: WithRegistry(nil)")
		}
		e.reg = reg
		return nil
	}
}

// WithStore sets the state store (default: a fresh state.Memory, which
// forgets everything when the process exits).
func WithStore(s state.Store) Option {
	return func(e *Engine) error {
		if s == nil {
			return errcode.New(errcode.Invalid, "openctl: WithStore(nil)")
		}
		e.store = s
		return nil
	}
}

// WithConcurrency bounds how many resources are worked on at once
// (default DefaultConcurrency).
func WithConcurrency(n int) Option {
	return func(e *Engine) error {
		if n < 1 {
			return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: concurrency must be at least 1, got %d", n))
		}
		e.concurrency = n
		return nil
	}
}

// WithLogger sets the structured logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(e *Engine) error {
		if l != nil {
			e.log = l
		}
		return nil
	}
}

// WithObserver sets a function that receives progress events. It is called
// from one goroutine at a time and should return quickly; a panic in it is
// recovered and logged.
func WithObserver(fn func(Event)) Option {
	return func(e *Engine) error { e.observer = fn; return nil }
}

// WithRetry sets how the engine retries provider calls (default
// [DefaultRetryPolicy]; a zero or out-of-range field takes the default's
// value, so MaxAttempts 0 means 5 and 1 disables retries).
//
// The rule: the engine retries whole provider calls — Get, Apply, Delete,
// List, Diff, and the reads that resolve a $ref — that fail with
// errcode.Transient (p.Retryable, if set, decides instead); other errors
// are never retried. Each retry is logged and reported as an
// [EventRetrying] before p.OnRetry, if set, is called. Providers do not
// retry those calls internally: a provider may retry a step inside Apply
// or Delete only where running the whole call again would be wrong after
// a side effect it already made.
func WithRetry(p backoff.Policy) Option {
	return func(e *Engine) error { e.retryPolicy = retryDefaults(p); return nil }
}

// WithReadyPolicy sets how long and how often Apply reads a $ref's
// target again while it lacks the field.
func WithReadyPolicy(p ReadyPolicy) Option {
	return func(e *Engine) error { e.ready = p.withDefaults(); return nil }
}

// WithLockWait makes Apply and Delete wait up to d for a state lock held
// by someone else, instead of failing at once with a Conflict error naming
// the holder.
func WithLockWait(d time.Duration) Option {
	return func(e *Engine) error { e.lockWait = d; return nil }
}

// New returns an Engine configured by opts.
func New(opts ...Option) (*Engine, error) {
	e := &Engine{
		reg:         &registry.Registry{},
		store:       state.NewMemory(),
		concurrency: DefaultConcurrency,
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		retryPolicy: DefaultRetryPolicy,
		ready:       ReadyPolicy{}.withDefaults(),
		maxDepth:    8,
	}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	if err := e.reg.Register(e.pending...); err != nil {
		return nil, err
	}
	e.pending = nil
	return e, nil
}

// Registry returns the engine's provider registry.
func (e *Engine) Registry() *registry.Registry { return e.reg }

// Store returns the engine's state store.
func (e *Engine) Store() state.Store { return e.store }

// Close closes the registry's providers that implement io.Closer.
func (e *Engine) Close() error { return e.reg.Close() }

// emit delivers an event to the observer, one at a time.
func (e *Engine) emit(ev Event) {
	if e.observer == nil {
		return
	}
	e.obsMu.Lock()
	defer e.obsMu.Unlock()
	// Stamped here, where deliveries are serialised, so that the times
	// the observer sees never decrease (see Event.Time).
	ev.Time = time.Now()
	defer func() {
		if v := recover(); v != nil {
			e.log.Error("event observer panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	e.observer(ev)
}

// safe calls fn, turning a panic into an Internal error that names the
// provider call ("provider panicked in apply"), and logging the stack.
// Callers wrap it with the resource.
func (e *Engine) safe(op string, id manifest.ID, fn func() error) error {
	err, _ := e.guard(op, id, fn)
	return err
}

// safeTop is safe for errors returned as they are: a panic's error names
// the resource too ("openctl: get Thing/a: provider panicked in get").
func (e *Engine) safeTop(op string, id manifest.ID, fn func() error) error {
	err, panicked := e.guard(op, id, fn)
	if panicked {
		err = wrapf(err, "%s %s", op, id.Short())
	}
	return err
}

// guard calls fn and reports whether it panicked; see safe.
func (e *Engine) guard(op string, id manifest.ID, fn func() error) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			e.log.Error("provider panicked", "op", op, "resource", id.String(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			msg := "provider panicked in " + op
			cause, ok := v.(error)
			if !ok {
				msg += fmt.Sprintf(": %v", v)
			}
			err, panicked = &errcode.Error{Code: errcode.Internal, Msg: msg, Err: cause}, true
		}
	}()
	return fn(), false
}

// stateWriteTimeout bounds a state write that must happen even though the
// operation's context was cancelled (the provider already made the change).
const stateWriteTimeout = 30 * time.Second

// afterWrite returns a context for recording a change the provider has
// already made: not cancelled with ctx (so ^C right after a create does not
// lose the record), but bounded.
func afterWrite(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), stateWriteTimeout)
}

// lock takes the store's lock for op, waiting up to e.lockWait.
func (e *Engine) lock(ctx context.Context, op string) (func() error, error) {
	unlock, err := state.LockWait(ctx, e.store, state.DefaultScope, state.NewLockInfo(op), e.lockWait, func(err error) {
		e.log.Info("waiting for state lock", "err", err.Error())
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return unlock, err
}

// Validate checks resources the way Apply and Plan do before they touch
// anything — manifest validity, routing to a provider, provider
// Validators, $ref syntax, that each $ref target routes to a provider and
// that its field is one the target's kind can have (registry.Kind.Fields),
// duplicates, dependency cycles and composite plans — without reading
// state or applying anything. Every problem found is reported, joined.
//
// Validate works offline: it cannot know whether a $ref target outside
// the resources given exists. Plan and Apply check that too (the target
// must exist live), before anything is applied.
func (e *Engine) Validate(ctx context.Context, resources ...*manifest.Resource) error {
	_, err := e.build(ctx, resources)
	return err
}
