package openctl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/openctl/openctl/errcode"
)

// RetryPolicy controls how the engine retries provider calls that fail
// with a Transient error. Errors of any other code are never retried.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, first included
	// (default 5; 1 disables retries).
	MaxAttempts int
	// Initial is the delay before the second attempt (default 250ms).
	Initial time.Duration
	// Max caps the delay between attempts (default 15s).
	Max time.Duration
	// Multiplier grows the delay after each attempt (default 2).
	Multiplier float64
	// Jitter spreads each delay randomly by ±Jitter of itself (default
	// 0.2), so parallel retries do not stampede.
	Jitter float64
}

// DefaultRetryPolicy is the policy an Engine uses unless told otherwise.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 5, Initial: 250 * time.Millisecond, Max: 15 * time.Second, Multiplier: 2, Jitter: 0.2}

func (p RetryPolicy) withDefaults() RetryPolicy {
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
	return d
}

// backoff yields capped exponential delays with jitter.
type backoff struct {
	next, max  time.Duration
	multiplier float64
	jitter     float64
}

func newBackoff(initial, max time.Duration, multiplier, jitter float64) *backoff {
	return &backoff{next: min(initial, max), max: max, multiplier: multiplier, jitter: jitter}
}

// delay returns the next delay and advances the sequence.
func (b *backoff) delay() time.Duration {
	d := b.next
	if b.jitter > 0 {
		d = time.Duration(float64(d) * (1 + b.jitter*(2*rand.Float64()-1)))
	}
	b.next = min(time.Duration(float64(b.next)*b.multiplier), b.max)
	return d
}

// cancelled reports that ctx ended while retrying after last: the context's
// error is the one in the chain (so errors.Is(err, context.Canceled) holds
// and the transient code of last does not invite another retry); last is
// kept in the message only.
func cancelled(ctx context.Context, last error) error {
	return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), last)
}

// wait blocks for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry calls fn until it succeeds, fails with a non-transient error, the
// attempts run out or ctx is done. onRetry is told about each retry. It
// returns the number of attempts made.
func (p RetryPolicy) retry(ctx context.Context, onRetry func(attempt int, delay time.Duration, err error), fn func() error) (int, error) {
	b := newBackoff(p.Initial, p.Max, p.Multiplier, p.Jitter)
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !errcode.Retryable(err) || attempt >= p.MaxAttempts {
			return attempt, err
		}
		if ctx.Err() != nil {
			return attempt, cancelled(ctx, err)
		}
		d := b.delay()
		if onRetry != nil {
			onRetry(attempt, d, err)
		}
		if wait(ctx, d) != nil {
			return attempt, cancelled(ctx, err)
		}
	}
}
