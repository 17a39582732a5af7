package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
)

// pollLock tries to take the lock, with backoff (20 ms doubling to
// 250 ms), until it succeeds or within passes, and returns the unlock
// function, or the error.
func pollLock(t *testing.T, s state.Store, within time.Duration) (func() error, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	var unlock func() error
	p := backoff.Policy{Initial: 20 * time.Millisecond, Max: 250 * time.Millisecond, Retryable: func(error) bool { return true }}
	_, err := backoff.Retry(ctx, p, func(ctx context.Context) error {
		u, err := s.Lock(ctx, testScope, state.NewLockInfo("apply"))
		unlock = u
		return err
	})
	return unlock, err
}

func TestLockHolderKilledReleasesTheLock(t *testing.T) {
	t.Parallel()
	s, dsn := newStore(t)
	c := startChild(t, "hold", dsn)
	require.Equal(t, "locked", c.line(t))

	// The parent sees the child as the holder.
	_, err := s.Lock(t.Context(), testScope, state.NewLockInfo("apply"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, c.cmd.Process.Pid, le.Holder.PID)
	assert.Equal(t, "helper-hold", le.Holder.Operation)
	assert.True(t, errors.Is(err, errcode.Conflict))

	// A live holder's lock is not broken without Force, and the refusal
	// names it.
	err = s.ForceUnlock(t.Context(), testScope, state.ForceUnlockOptions{})
	require.ErrorAs(t, err, &le)
	assert.True(t, le.Running)
	assert.Equal(t, c.cmd.Process.Pid, le.Holder.PID)
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d", c.cmd.Process.Pid))
	_, err = s.Lock(t.Context(), testScope, state.NewLockInfo("apply"))
	require.ErrorAs(t, err, &le, "the child still holds the lock")

	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	_ = c.cmd.Wait()
	killed := time.Now()

	unlock, err := pollLock(t, s, 10*time.Second)
	require.NoError(t, err, "the lock of a killed holder must be free within seconds")
	t.Logf("lock free %v after SIGKILL of its holder", time.Since(killed).Round(time.Millisecond))
	// The dead holder's info row was overwritten with ours.
	var pid int
	require.NoError(t, sql(t, dsn, "SELECT pid FROM openctl_locks WHERE scope = $1", testScope).Scan(&pid))
	assert.Equal(t, os.Getpid(), pid)
	require.NoError(t, unlock())
}

func TestTwoProcessesRaceForTheLock(t *testing.T) {
	t.Parallel()
	_, dsn := newStore(t)
	for round := range 3 {
		a, b := startChild(t, "race", dsn), startChild(t, "race", dsn)
		require.Equal(t, "ready", a.line(t))
		require.Equal(t, "ready", b.line(t))
		require.NoError(t, a.write("go\n"))
		require.NoError(t, b.write("go\n"))
		ra, rb := a.line(t), b.line(t)
		require.True(t, (ra == "won") != (rb == "won"), "round %d: exactly one must win: %q, %q", round, ra, rb)
		winner, loser, lost := a, b, rb
		if rb == "won" {
			winner, loser, lost = b, a, ra
		}
		// The loser got CONFLICT naming the winner.
		assert.Equal(t, []string{"lost", strconv.Itoa(winner.cmd.Process.Pid), string(errcode.Conflict)}, strings.Fields(lost), "round %d", round)
		require.NoError(t, loser.cmd.Wait())
		require.NoError(t, winner.stdin.Close())
		require.NoError(t, winner.cmd.Wait())
	}
}

func TestForceUnlock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	holder, dsn := newStore(t)
	other := openStore(t, dsn)

	unlock, err := holder.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	_, err = other.Lock(ctx, testScope, state.NewLockInfo("delete"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le)

	// The holder is this process, which runs: refused without Force.
	err = other.ForceUnlock(ctx, testScope, state.ForceUnlockOptions{})
	require.ErrorAs(t, err, &le)
	assert.True(t, le.Running)
	assert.Equal(t, os.Getpid(), le.Holder.PID)
	assert.Equal(t, errcode.Conflict, errcode.Of(err))
	assert.Contains(t, err.Error(), "openctl state force-unlock --force "+testScope)
	_, err = other.Lock(ctx, testScope, state.NewLockInfo("delete"))
	require.ErrorAs(t, err, &le, "still held")

	require.NoError(t, other.ForceUnlock(ctx, testScope, state.ForceUnlockOptions{Force: true}))
	var rows int
	require.NoError(t, sql(t, dsn, "SELECT count(*) FROM openctl_locks").Scan(&rows))
	assert.Zero(t, rows)
	u2, err := other.Lock(ctx, testScope, state.NewLockInfo("delete"))
	require.NoError(t, err, "the lock is free after ForceUnlock")

	// The broken holder's unlock reports the lost lock and does not
	// disturb the new holder.
	err = unlock()
	require.Error(t, err)
	assert.Equal(t, errcode.Conflict, errcode.Of(err), "got %v", err)
	assert.Contains(t, err.Error(), "was lost while held")
	_, err = holder.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "delete", le.Holder.Operation)
	require.NoError(t, u2())

	// Breaking a free lock is harmless.
	require.NoError(t, other.ForceUnlock(ctx, testScope, state.ForceUnlockOptions{}))
	require.NoError(t, other.ForceUnlock(ctx, "never-locked", state.ForceUnlockOptions{}))
}

func TestStaleLockInfoIsOverwritten(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, dsn := newStore(t)
	// A row left behind by a holder whose session ended.
	var one int
	require.NoError(t, sql(t, dsn, `INSERT INTO openctl_locks (scope, lock_id, who, host, pid, operation, created, backend_pid)
VALUES ($1, 'old', 'ghost', 'gone-host', 1, 'apply', now() - interval '1 day', 999999) RETURNING 1`, testScope).Scan(&one))
	unlock, err := s.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	var who string
	require.NoError(t, sql(t, dsn, "SELECT who FROM openctl_locks WHERE scope = $1", testScope).Scan(&who))
	assert.NotEqual(t, "ghost", who)
	require.NoError(t, unlock())
}

func TestCloseReleasesHeldLocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, dsn := newStore(t)
	a := openStore(t, dsn)
	b := openStore(t, dsn)
	unlock, err := a.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, unlock(), "unlock after Close is harmless")
	u, err := b.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	require.NoError(t, u())
}

func TestLockHolderWithoutInfoRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, dsn := newStore(t)
	b := openStore(t, dsn)
	unlock, err := a.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	defer unlock()
	var n int
	require.NoError(t, sql(t, dsn, "WITH d AS (DELETE FROM openctl_locks RETURNING 1) SELECT count(*) FROM d").Scan(&n))
	require.Equal(t, 1, n)

	// Still locked (the advisory lock is what counts); the error says the
	// holder is unknown rather than naming a wrong one.
	start := time.Now()
	_, err = b.Lock(ctx, testScope, state.NewLockInfo("delete"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, le.Detail, "has not recorded who it is")
	assert.Less(t, time.Since(start), 10*time.Second)
}

// A holder whose lock connection drops (here: its backend is terminated)
// loses the lock; another client can take it. The holder's unlock must
// say so rather than report a clean release.
func TestUnlockReportsALostLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, dsn := newStore(t)
	b := openStore(t, dsn)
	unlock, err := a.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)

	var terminated bool
	require.NoError(t, sql(t, dsn, "SELECT pg_terminate_backend(backend_pid) FROM openctl_locks WHERE scope = $1", testScope).Scan(&terminated))
	require.True(t, terminated)
	unlockB, err := pollLock(t, b, 10*time.Second)
	require.NoError(t, err, "the lock is free once the holder's session ended")

	err = unlock()
	require.Error(t, err, "a's unlock must report the lost lock")
	assert.Equal(t, errcode.Conflict, errcode.Of(err), "got %v", err)
	assert.Contains(t, err.Error(), `the lock on scope "default" was lost while held`)
	assert.Contains(t, err.Error(), "another client may have run meanwhile")
	// Idempotent: a second call returns the same error.
	assert.Equal(t, err, unlock())

	// a's failed unlock left b's lock and info row alone.
	_, err = a.Lock(ctx, testScope, state.NewLockInfo("delete"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "apply", le.Holder.Operation)
	assert.Empty(t, le.Detail, "b's info row is intact")
	require.NoError(t, unlockB())
	require.NoError(t, unlockB(), "unlock is idempotent")
}

// A lock released normally is not reported lost, and a second unlock is a
// no-op.
func TestUnlockTwiceIsHarmless(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	unlock, err := s.Lock(t.Context(), testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	require.NoError(t, unlock())
	require.NoError(t, unlock())
}

// ForceUnlock must delete only the terminated holder's info row: a client
// that takes the lock after the holder's session ended and before the row
// is deleted keeps its row.
func TestForceUnlockKeepsANewHoldersRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	holder, dsn := newStore(t)
	breaker := openStore(t, dsn)
	newcomer := openStore(t, dsn)
	observer := openStore(t, dsn)

	unlock, err := holder.Lock(ctx, testScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	var unlockNew func() error
	var hookErr error
	postgres.SetForceTerminatedHook(breaker, func() {
		unlockNew, hookErr = newcomer.Lock(ctx, testScope, state.NewLockInfo("newcomer"))
	})
	require.NoError(t, breaker.ForceUnlock(ctx, testScope, state.ForceUnlockOptions{Force: true}))
	require.NoError(t, hookErr, "the lock is free once the holder was terminated")
	require.NotNil(t, unlockNew)

	var op string
	require.NoError(t, sql(t, dsn, "SELECT operation FROM openctl_locks WHERE scope = $1", testScope).Scan(&op),
		"the new holder's info row survives ForceUnlock")
	assert.Equal(t, "newcomer", op)
	_, err = observer.Lock(ctx, testScope, state.NewLockInfo("delete"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "newcomer", le.Holder.Operation)
	assert.Empty(t, le.Detail)

	assert.Equal(t, errcode.Conflict, errcode.Of(unlock()), "the terminated holder learns it lost the lock")
	require.NoError(t, unlockNew())
}
