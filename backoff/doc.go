// Package backoff is openctl's one implementation of capped exponential
// backoff with jitter: the engine's retries of transient provider errors,
// the Proxmox provider's task polling and lock-timeout retries, the node
// agent's client, and the state stores' lock waits all use it, so that
// every wait in openctl is bounded, cancellable and spread the same way.
//
// A [Policy] describes the delays; [Policy.Start] returns a [Backoff] that
// yields them one at a time, and [Retry] runs a function until it
// succeeds, fails permanently, runs out of attempts or its context ends:
//
//	p := backoff.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2, MaxAttempts: 5}
//	attempts, err := backoff.Retry(ctx, p, func(ctx context.Context) error {
//		return client.Ping(ctx)
//	})
//
// By default Retry retries errors that match errcode.Transient (see
// errcode.Retryable) and nothing else; [Policy.Retryable] changes that.
//
// Nothing in this package sleeps without a context: [Sleep] returns as
// soon as the context is done.
package backoff
