package openctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/manifest"
)

// progress is what one node's work reports back to the run.
type progress struct {
	outcome  Outcome
	res      *manifest.Resource
	attempts int
}

// run works through s's graph — applying or deleting each node as it says —
// and collects one Result per node, in execution order.
func (e *Engine) run(ctx context.Context, s *set) (*Report, error) {
	g := s.g
	start := time.Now()
	prog := make(map[string]*progress, len(s.nodes))
	for k := range s.nodes {
		prog[k] = &progress{}
	}
	onEvent := func(ev graph.Event[string]) {
		n := s.nodes[ev.Node]
		out := Event{ID: n.id, Op: n.op(), Elapsed: ev.Duration} // emit stamps the time
		switch ev.Type {
		case graph.EventStarted:
			out.Type = EventStarted
		case graph.EventSucceeded:
			out.Type, out.Outcome = EventSucceeded, prog[ev.Node].outcome
		case graph.EventFailed:
			out.Type, out.Outcome, out.Err = EventFailed, OutcomeFailed, ev.Err
		case graph.EventSkipped:
			out.Type, out.Outcome, out.Err = EventSkipped, OutcomeSkipped, e.skipError(s, n, ev.Cause, ev.Err)
		default:
			return
		}
		e.emit(out)
	}
	results, err := g.Run(ctx, graph.RunOptions[string]{Concurrency: e.concurrency, OnEvent: onEvent},
		func(ctx context.Context, key string) error {
			n := s.nodes[key]
			switch {
			case n.refused != nil:
				return n.refused
			case n.del:
				return e.deleteOne(ctx, n, prog[key])
			}
			return e.applyOne(ctx, n, prog[key])
		})
	if results == nil {
		return nil, err
	}
	order, err := g.Sort()
	if err != nil {
		return nil, err
	}
	rep := &Report{Results: make([]Result, 0, len(order))}
	for _, k := range order {
		n, r, p := s.nodes[k], results[k], prog[k]
		res := Result{ID: n.id, Owner: n.owner, Source: n.res.Source, Duration: r.Duration, Attempts: p.attempts}
		switch r.Status {
		case graph.Succeeded:
			res.Outcome, res.Resource = p.outcome, p.res
		case graph.Failed:
			res.Outcome, res.Err = OutcomeFailed, r.Err
		default:
			var se *graph.SkipError[string]
			var cause string
			if errors.As(r.Err, &se) {
				cause = se.Cause
			}
			res.Outcome, res.Err = OutcomeSkipped, e.skipError(s, n, cause, r.Err)
		}
		rep.Results = append(rep.Results, res)
	}
	rep.Duration = time.Since(start)
	return rep, rep.Err()
}

// skipError explains why a node was skipped, naming the dependency that
// failed (cause, a graph key) or the cancellation.
func (e *Engine) skipError(s *set, n *node, cause string, err error) error {
	if c := s.nodes[cause]; c != nil {
		return &SkippedError{ID: n.id, Op: n.op(), Cause: c.id, Err: err}
	}
	return &SkippedError{ID: n.id, Op: n.op(), Err: err}
}

// SkippedError reports a resource that was not worked on because a
// resource it depends on failed (Cause), or because the operation was
// cancelled (Cause is zero; Err is the context's error).
type SkippedError struct {
	ID    manifest.ID
	Op    string
	Cause manifest.ID
	Err   error
}

// Error names the skipped resource and the dependency that failed.
func (e *SkippedError) Error() string {
	if e.Cause != (manifest.ID{}) {
		return fmt.Sprintf("openctl: %s %s skipped: %s failed", e.Op, e.ID.Short(), e.Cause.Short())
	}
	return fmt.Sprintf("openctl: %s %s skipped: %v", e.Op, e.ID.Short(), e.Err)
}

// Unwrap returns the underlying reason.
func (e *SkippedError) Unwrap() error { return e.Err }
