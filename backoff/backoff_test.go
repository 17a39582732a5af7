package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
)

func TestDelaysGrowToTheCap(t *testing.T) {
	b := backoff.Policy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 3}.Start()
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, time.Second, time.Second}, got)
}

func TestDefaultMultiplierDoubles(t *testing.T) {
	b := backoff.Policy{Initial: time.Millisecond}.Start()
	assert.Equal(t, time.Millisecond, b.Next())
	assert.Equal(t, 2*time.Millisecond, b.Next())
	assert.Equal(t, 4*time.Millisecond, b.Next())
}

func TestInitialAboveMaxIsCapped(t *testing.T) {
	b := backoff.Policy{Initial: time.Minute, Max: time.Second}.Start()
	assert.Equal(t, time.Second, b.Next())
}

func TestNoCapDoesNotOverflow(t *testing.T) {
	b := backoff.Policy{Initial: time.Hour, Multiplier: 1000}.Start()
	for range 20 {
		assert.Positive(t, b.Next())
	}
}

func TestJitterStaysWithinBounds(t *testing.T) {
	p := backoff.Policy{Initial: time.Second, Max: time.Second, Jitter: 0.2}
	b := p.Start()
	spread := map[time.Duration]bool{}
	for range 200 {
		d := b.Next()
		require.GreaterOrEqual(t, d, 800*time.Millisecond)
		require.LessOrEqual(t, d, 1200*time.Millisecond)
		spread[d] = true
	}
	assert.Greater(t, len(spread), 10, "jitter must spread the delays")
}

func TestRetryStopsOnSuccess(t *testing.T) {
	calls := 0
	n, err := backoff.Retry(context.Background(), backoff.Policy{Initial: time.Microsecond, MaxAttempts: 5}, func(context.Context) error {
		calls++
		if calls < 3 {
			return errcode.New(errcode.Transient, "busy")
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, 3, calls)
}

func TestRetryBoundedByMaxAttempts(t *testing.T) {
	var retries []int
	p := backoff.Policy{Initial: time.Microsecond, MaxAttempts: 4, OnRetry: func(a int, _ time.Duration, _ error) { retries = append(retries, a) }}
	n, err := backoff.Retry(context.Background(), p, func(context.Context) error { return errcode.New(errcode.Transient, "down") })
	assert.Equal(t, 4, n)
	assert.True(t, errors.Is(err, errcode.Transient))
	assert.Equal(t, []int{1, 2, 3}, retries)
}

func TestRetryNeverRetriesPermanentErrors(t *testing.T) {
	n, err := backoff.Retry(context.Background(), backoff.Policy{Initial: time.Microsecond, MaxAttempts: 5}, func(context.Context) error {
		return errcode.New(errcode.Invalid, "bad")
	})
	assert.Equal(t, 1, n)
	assert.True(t, errors.Is(err, errcode.Invalid))
}

func TestRetryableOverride(t *testing.T) {
	errBusy := errors.New("busy")
	calls := 0
	p := backoff.Policy{Initial: time.Microsecond, MaxAttempts: 3, Retryable: func(err error) bool { return errors.Is(err, errBusy) }}
	n, err := backoff.Retry(context.Background(), p, func(context.Context) error { calls++; return errBusy })
	assert.Equal(t, 3, n)
	assert.ErrorIs(t, err, errBusy)
}

func TestRetryEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := backoff.Policy{Initial: time.Hour, OnRetry: func(int, time.Duration, error) { cancel() }}
	n, err := backoff.Retry(ctx, p, func(context.Context) error { return errcode.New(errcode.Transient, "down") })
	assert.Equal(t, 1, n)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, errors.Is(err, errcode.Transient), "a cancelled retry must not look retryable")
	assert.Contains(t, err.Error(), "down")
}

func TestSleepReturnsTheCause(t *testing.T) {
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	assert.ErrorIs(t, backoff.Sleep(ctx, time.Hour), cause)
	assert.ErrorIs(t, backoff.Sleep(ctx, 0), cause)
	assert.NoError(t, backoff.Sleep(context.Background(), 0))
	assert.NoError(t, backoff.Sleep(context.Background(), time.Microsecond))
}

func ExampleRetry() {
	calls := 0
	p := backoff.Policy{Initial: time.Millisecond, Max: 10 * time.Millisecond, Jitter: 0.2, MaxAttempts: 5}
	attempts, err := backoff.Retry(context.Background(), p, func(context.Context) error {
		calls++
		if calls < 3 {
			return errcode.New(errcode.Transient, "503 Service Unavailable")
		}
		return nil
	})
	fmt.Println(attempts, err)
	// Output: 3 <nil>
}
