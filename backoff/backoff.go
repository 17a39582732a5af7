package backoff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/openctl/openctl/errcode"
)

// Policy describes a sequence of delays: Initial, then each delay
// Multiplier times the one before, capped at Max, each spread randomly by
// ±Jitter of itself. A Policy is a plain value, safe to copy and to use
// from several goroutines; the Backoff it starts is not.
type Policy struct {
	// Initial is the first delay. Zero or negative means no delay.
	Initial time.Duration
	// Max caps every delay before jitter; zero means no cap.
	Max time.Duration
	// Multiplier grows the delay after each step; below 1 means 2.
	Multiplier float64
	// Jitter spreads each delay by a random fraction in [-Jitter, +Jitter]
	// of itself, so that parallel waiters do not stampede; it is clamped
	// to [0, 1).
	Jitter float64
	// MaxAttempts bounds Retry: the total number of calls, first included.
	// Zero or negative means no bound but the context. It does not affect
	// a Backoff.
	MaxAttempts int
	// Retryable tells Retry which errors are worth another attempt; nil
	// means errcode.Retryable (errors matching errcode.Transient).
	Retryable func(error) bool
	// OnRetry, if not nil, is told about each retry before Retry waits:
	// the attempt that failed (1 for the first call), the delay before the
	// next one and the error.
	OnRetry func(attempt int, delay time.Duration, err error)
}

// Backoff yields the delays of a Policy one at a time. It is not safe for
// concurrent use.
type Backoff struct {
	p    Policy
	next time.Duration
}

// Start returns a Backoff at the policy's first delay.
func (p Policy) Start() *Backoff {
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	p.Jitter = min(max(p.Jitter, 0), 0.999)
	b := &Backoff{p: p, next: max(p.Initial, 0)}
	b.next = b.capped(b.next)
	return b
}

func (b *Backoff) capped(d time.Duration) time.Duration {
	if b.p.Max > 0 && d > b.p.Max {
		return b.p.Max
	}
	return d
}

// Next returns the next delay, jitter applied, and advances the sequence.
func (b *Backoff) Next() time.Duration {
	d := b.next
	if grown := time.Duration(float64(b.next) * b.p.Multiplier); grown > b.next {
		b.next = b.capped(grown)
	} else if b.next > 0 && b.p.Max > 0 {
		// Overflowed: stay at the cap.
		b.next = b.p.Max
	}
	if b.p.Jitter > 0 && d > 0 {
		d = time.Duration(float64(d) * (1 + b.p.Jitter*(2*rand.Float64()-1)))
	}
	return d
}

// Wait sleeps for the next delay or until ctx is done; see Sleep.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Sleep waits for d, or until ctx is done, in which case it returns
// context.Cause(ctx). A d of zero or less returns at once (ctx's cause if
// it is already done).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Retry calls fn until it returns nil, returns an error p.Retryable
// refuses, p.MaxAttempts calls were made, or ctx is done, waiting the
// policy's delays between calls. It returns the number of calls made and
// the last error. When ctx ends while retrying, the error wraps
// context.Cause(ctx) — so errors.Is(err, context.Canceled) holds and the
// last attempt's transient code does not invite another retry — and
// quotes the last attempt's error in its message.
func Retry(ctx context.Context, p Policy, fn func(ctx context.Context) error) (int, error) {
	retryable := p.Retryable
	if retryable == nil {
		retryable = errcode.Retryable
	}
	b := p.Start()
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !retryable(err) || (p.MaxAttempts > 0 && attempt >= p.MaxAttempts) {
			return attempt, err
		}
		if ctx.Err() != nil {
			return attempt, Cancelled(ctx, err)
		}
		d := b.Next()
		if p.OnRetry != nil {
			p.OnRetry(attempt, d, err)
		}
		if Sleep(ctx, d) != nil {
			return attempt, Cancelled(ctx, err)
		}
	}
}

// Cancelled returns the error for a wait that ctx ended after last
// failed: it wraps context.Cause(ctx) and quotes last in its message only.
func Cancelled(ctx context.Context, last error) error {
	return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), last)
}
