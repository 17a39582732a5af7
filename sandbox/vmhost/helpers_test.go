package vmhost_test

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, "waiting for %s", what)
}

// readFile returns the host's file p ("" when missing).
func readFile(h *vmhost.Host, p string) string {
	b, _ := h.ReadFile(p)
	return string(b)
}

// writeFile writes the host's file p.
func writeFile(t *testing.T, h *vmhost.Host, p, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, h.WriteFile(p, []byte(content), mode))
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
