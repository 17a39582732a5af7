package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
)

func TestLockWait(t *testing.T) {
	st := state.NewMemory()
	ctx := t.Context()
	unlock, err := state.LockWait(ctx, st, state.DefaultScope, state.NewLockInfo("first"), 0, nil)
	require.NoError(t, err)

	// Held: wait 0 fails at once, naming the holder.
	waits := 0
	_, err = state.LockWait(ctx, st, state.DefaultScope, state.NewLockInfo("second"), 0, func(error) { waits++ })
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Conflict), "%v", err)
	assert.Contains(t, err.Error(), "first")
	assert.Zero(t, waits)

	// Released while waiting: the waiter gets it. The holder lets go as
	// soon as the waiter reports its first wait.
	unlock2, err := state.LockWait(ctx, st, state.DefaultScope, state.NewLockInfo("second"), 10*time.Second, func(error) {
		waits++
		if waits == 1 {
			assert.NoError(t, unlock())
		}
	})
	require.NoError(t, err)
	assert.Equal(t, 1, waits)

	// Cancelled while waiting: the context ends at the first wait.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err = state.LockWait(cctx, st, state.DefaultScope, state.NewLockInfo("third"), time.Minute, func(error) { cancel() })
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, errcode.Is(err, errcode.Conflict), "%v", err)

	// A wait that passes gives up with the holder's CONFLICT error.
	start := time.Now()
	_, err = state.LockWait(ctx, st, state.DefaultScope, state.NewLockInfo("fourth"), 50*time.Millisecond, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "second")
	assert.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, unlock2())
}
