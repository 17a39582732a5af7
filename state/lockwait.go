package state

import (
	"context"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
)

// lockWaitPolicy spaces LockWait's tries: 100 ms doubling to 2 s.
var lockWaitPolicy = backoff.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second}

// LockWait takes st's lock on scope for info, and when another holder has
// it (a CONFLICT error naming the holder) tries again with growing delays
// (100 ms doubling to 2 s, the last one cut short to end at wait) for up
// to wait; wait 0 tries once. onWait, if not nil, is called with the
// holder's error before each wait. It returns the unlock function, the
// last CONFLICT error when wait passed, or an errcode.Conflict error
// wrapping the context's cause when ctx ends first.
func LockWait(ctx context.Context, st Store, scope string, info LockInfo, wait time.Duration, onWait func(error)) (unlock func() error, err error) {
	deadline := time.Now().Add(wait)
	b := lockWaitPolicy.Start()
	for {
		unlock, err := st.Lock(ctx, scope, info)
		if err == nil || !errcode.Is(err, errcode.Conflict) || !time.Now().Before(deadline) {
			return unlock, err
		}
		if onWait != nil {
			onWait(err)
		}
		if err := backoff.Sleep(ctx, min(b.Next(), time.Until(deadline)+time.Millisecond)); err != nil {
			return nil, errcode.Wrap(errcode.Conflict, "state: waiting for the state lock", err)
		}
	}
}
