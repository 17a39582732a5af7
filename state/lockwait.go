package state

import (
	"context"
	"time"

	"github.com/openctl/openctl/errcode"
)

// LockWait takes st's lock on scope for info, and when another holder has
// it (a CONFLICT error naming the holder) tries again with growing delays
// (100 ms doubling to 2 s) for up to wait; wait 0 tries once. onWait, if
// not nil, is called with the holder's error before each wait. It returns
// the unlock function, the last CONFLICT error when wait passed, or the
// context's cause when ctx ends first.
func LockWait(ctx context.Context, st Store, scope string, info LockInfo, wait time.Duration, onWait func(error)) (unlock func() error, err error) {
	deadline := time.Now().Add(wait)
	delay := 100 * time.Millisecond
	for {
		unlock, err := st.Lock(ctx, scope, info)
		if err == nil || !errcode.Is(err, errcode.Conflict) || !time.Now().Before(deadline) {
			return unlock, err
		}
		if onWait != nil {
			onWait(err)
		}
		t := time.NewTimer(min(delay, time.Until(deadline)+time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errcode.Wrap(errcode.Conflict, "waiting for the state lock", context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}
