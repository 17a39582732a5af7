//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hasOpen reports whether process pid has path open (Linux: /proc).
func hasOpen(pid int, path string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// TestValidateFIFOTerminated: "openctl validate -f FIFO" blocked on a
// named pipe — in its read, or in its open for want of a writer — exits
// 143 promptly on the first SIGTERM (issue 12: it blocked forever and
// ignored the first SIGTERM).
func TestValidateFIFOTerminated(t *testing.T) {
	for _, blocked := range []string{"read", "open"} {
		t.Run(blocked, func(t *testing.T) {
			dir := t.TempDir()
			first, second := filepath.Join(dir, "first.yaml"), filepath.Join(dir, "second.yaml")
			require.NoError(t, syscall.Mkfifo(first, 0o600))
			require.NoError(t, syscall.Mkfifo(second, 0o600))
			// A writer that stays: openctl's open of first returns, its read blocks.
			w, err := os.OpenFile(first, os.O_RDWR, 0)
			require.NoError(t, err)
			defer w.Close()

			cmd := exec.CommandContext(t.Context(), os.Args[0], "validate", "-f", first, "-f", second)
			cmd.Env = append(os.Environ(), "OPENCTL_TEST_MAIN=1",
				"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
				"OPENCTL_HOME="+filepath.Join(dir, "home"), "OPENCTL_CONFIG="+filepath.Join(dir, "none.yaml"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			pid := cmd.Process.Pid
			waitFor(t, func() bool { return hasOpen(pid, first) })
			if blocked == "open" {
				// first ends; openctl goes on to second, which has no writer.
				_, err := w.WriteString("apiVersion: proxmox.openctl.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\n")
				require.NoError(t, err)
				require.NoError(t, w.Close())
				waitFor(t, func() bool { return !hasOpen(pid, first) })
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("openctl did not exit within 10s of SIGTERM\nstderr: %s", stderr.String())
			}
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "err %v, stderr: %s", err, stderr.String())
			assert.Equal(t, 143, ee.ExitCode(), "stderr: %s", stderr.String())
			assert.Contains(t, stderr.String(), "terminated: cancelling the work in flight")
		})
	}
}
