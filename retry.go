package openctl

import (
	"context"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/manifest"
)

// DefaultRetryPolicy is the retry policy an Engine uses unless
// [WithRetry] says otherwise: 5 attempts, the first retry after 250ms,
// each delay twice the one before up to 15s, spread by ±20%.
var DefaultRetryPolicy = backoff.Policy{MaxAttempts: 5, Initial: 250 * time.Millisecond, Max: 15 * time.Second, Multiplier: 2, Jitter: 0.2}

// retryDefaults fills the fields of p that are not set (zero, or out of
// range) with DefaultRetryPolicy's.
func retryDefaults(p backoff.Policy) backoff.Policy {
	d := DefaultRetryPolicy
	if p.MaxAttempts > 0 {
		d.MaxAttempts = p.MaxAttempts
	}
	if p.Initial > 0 {
		d.Initial = p.Initial
	}
	if p.Max > 0 {
		d.Max = p.Max
	}
	if p.Multiplier >= 1 {
		d.Multiplier = p.Multiplier
	}
	if p.Jitter > 0 && p.Jitter < 1 {
		d.Jitter = p.Jitter
	}
	d.Retryable, d.OnRetry = p.Retryable, p.OnRetry
	return d
}

// retry makes one whole provider call, fn, under the engine's retry
// policy: again after a transient error, logging each retry and, for an
// op ("apply", "delete"), reporting it as an EventRetrying; reads outside
// an operation (op "") are only logged. It returns the number of calls
// made.
func (e *Engine) retry(ctx context.Context, id manifest.ID, op string, fn func(ctx context.Context) error) (int, error) {
	p := e.retryPolicy
	then := p.OnRetry
	p.OnRetry = func(attempt int, d time.Duration, err error) {
		e.log.Warn("transient error; retrying", "resource", id.String(), "op", op, "attempt", attempt, "delay", d, "err", err.Error())
		if op != "" {
			e.emit(Event{Type: EventRetrying, ID: id, Op: op, Attempt: attempt, Delay: d, Err: err})
		}
		if then != nil {
			then(attempt, d, err)
		}
	}
	return backoff.Retry(ctx, p, fn)
}
