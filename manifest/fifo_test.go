//go:build unix

package manifest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/manifest"
)

// mkfifo makes a named pipe in a temporary directory.
func mkfifo(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	return path
}

// loadAsync runs Load in a goroutine; the result arrives on the channel.
func loadAsync(ctx context.Context, paths []string, opts manifest.LoadOptions) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := manifest.Load(ctx, paths, opts)
		ch <- err
	}()
	return ch
}

// returnsWithin waits for Load's result, failing after d: a Load that
// never returns is the bug (issue 12: validate -f FIFO blocked forever).
func returnsWithin(t *testing.T, ch <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("Load did not return within %v", d)
		return nil
	}
}

// TestLoadFIFO: a named pipe given as a file is read to its end, like
// standard input.
func TestLoadFIFO(t *testing.T) {
	fifo := mkfifo(t, "in.yaml")
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.WriteString(vmYAML("web-01"))
	}()
	rs, err := manifest.Load(t.Context(), []string{fifo}, manifest.LoadOptions{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "web-01", rs[0].Metadata.Name)
}

// TestLoadFIFOCancelledInOpen: cancelling ctx while Load waits for a
// writer to open the pipe returns the cause at once, and releases the
// open (the pipe has no reader left afterwards).
func TestLoadFIFOCancelledInOpen(t *testing.T) {
	fifo := mkfifo(t, "in.yaml")
	stop := errors.New("stop")
	ctx, cancel := context.WithCancelCause(t.Context())
	ch := loadAsync(ctx, []string{fifo}, manifest.LoadOptions{})
	cancel(stop)
	err := returnsWithin(t, ch, 10*time.Second)
	assert.ErrorIs(t, err, stop)
}

// TestLoadFIFOCancelledInRead: cancelling ctx while Load reads a pipe
// whose writer writes nothing and does not close it returns at once.
func TestLoadFIFOCancelledInRead(t *testing.T) {
	fifo := mkfifo(t, "in.yaml")
	stop := errors.New("stop")
	ctx, cancel := context.WithCancelCause(t.Context())
	ch := loadAsync(ctx, []string{fifo}, manifest.LoadOptions{})
	// Opening for writing without blocking succeeds once Load has the
	// pipe open for reading; the writer then stays, silent.
	var w *os.File
	pctx, pcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer pcancel()
	b := backoff.Policy{Initial: time.Millisecond, Max: 50 * time.Millisecond}.Start()
	for {
		var err error
		if w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			break
		}
		require.NoError(t, b.Wait(pctx), "Load never opened the pipe")
	}
	defer w.Close()
	_, _ = w.WriteString("apiVersion: proxmox")
	cancel(stop)
	err := returnsWithin(t, ch, 10*time.Second)
	assert.ErrorIs(t, err, stop)
}

// TestLoadStdinCancelled: standard input that never ends does not block
// a cancelled Load.
func TestLoadStdinCancelled(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	defer r.Close()
	ctx, cancel := context.WithCancelCause(t.Context())
	ch := loadAsync(ctx, []string{"-"}, manifest.LoadOptions{Stdin: r})
	cancel(context.Canceled)
	assert.ErrorIs(t, returnsWithin(t, ch, 10*time.Second), context.Canceled)
}

// TestLoadDirectorySkipsFIFO: a directory walk skips a named pipe, even
// one named like a manifest, instead of blocking on it.
func TestLoadDirectorySkipsFIFO(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "sub", "pipe.yaml"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "vm.yaml"), []byte(vmYAML("web-01")), 0o600))
	require.NoError(t, os.Symlink("pipe.yaml", filepath.Join(dir, "link.yaml")))
	err := returnsWithin(t, loadAsync(t.Context(), []string{dir}, manifest.LoadOptions{Recursive: true}), 10*time.Second)
	require.NoError(t, err)
}
