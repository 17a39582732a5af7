package state_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
)

// envLockHolderDir makes the test binary a TestLockHolderHelper process.
const envLockHolderDir = "OPENCTL_TEST_LOCKHOLDER_DIR"

// TestLockHolderHelper is a child of TestFileStoreLockHolderProcess: it
// takes the default lock, prints "locked" and holds it until stdin closes
// or it is killed.
func TestLockHolderHelper(t *testing.T) {
	dir := os.Getenv(envLockHolderDir)
	if dir == "" {
		t.Skip("helper process for TestFileStoreLockHolderProcess")
	}
	s, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	unlock, err := s.Lock(t.Context(), state.DefaultScope, state.NewLockInfo("apply"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = unlock()
	os.Exit(0)
}

// A process holding the lock is not broken by ForceUnlock without Force,
// and the refusal names it (force-unlock once broke a live holder's lock
// without a word). Once it is SIGKILLed, the next Lock takes the lock over
// with a warning (it once needed force-unlock every time).
func TestFileStoreLockHolderProcess(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "state")
	var logs bytes.Buffer
	s, err := state.OpenFile(dir, state.FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderHelper$", "-test.count=1")
	cmd.Env = helperEnv(envLockHolderDir, dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	child := cmd.Process.Pid

	// Alive: neither Lock nor ForceUnlock breaks it.
	_, err = s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, child, le.Holder.PID)
	assert.False(t, le.Stale)
	err = s.ForceUnlock(ctx, state.DefaultScope, state.ForceUnlockOptions{})
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Conflict), "got %v", err)
	require.ErrorAs(t, err, &le)
	assert.True(t, le.Running)
	assert.Equal(t, child, le.Holder.PID)
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d", child))
	assert.Contains(t, err.Error(), "--force")
	_, err = s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
	require.ErrorAs(t, err, &le, "the child still holds the lock")
	assert.Empty(t, logs.String())

	// Killed: the next Lock clears its lock, with a warning.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait() // reaped: its pid no longer runs
	unlock, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
	if state.NewLockInfo("x").BootID == "" {
		// No boot ID: the holder is not provably dead; the lock is stale.
		require.ErrorAs(t, err, &le)
		assert.True(t, le.Stale)
		return
	}
	require.NoError(t, err, "a SIGKILLed holder's lock is taken over")
	defer unlock()
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	assert.Contains(t, logs.String(), "cleared a stale lock")
	assert.Contains(t, logs.String(), fmt.Sprintf("pid=%d", child))
	assert.Contains(t, logs.String(), "operation=apply")
}
