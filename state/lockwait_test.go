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

	// Released while waiting: the waiter gets it.
	go func() { time.Sleep(150 * time.Millisecond); _ = unlock() }()
	unlock2, err := state.LockWait(ctx, st, state.DefaultScope, state.NewLockInfo("second"), 10*time.Second, func(error) { waits++ })
	require.NoError(t, err)
	assert.Positive(t, waits)

	// Cancelled while waiting.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = state.LockWait(cctx, st, state.DefaultScope, state.NewLockInfo("third"), time.Minute, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, unlock2())
}
