package agenttest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// LogBuffer collects the lines of a JSON slog handler, for tests that
// check what the agent or its client logged. It is safe for concurrent
// use.
type LogBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

var _ io.Writer = (*LogBuffer)(nil)

// NewLogger returns a JSON logger at level writing into a new LogBuffer.
func NewLogger(level slog.Level) (*slog.Logger, *LogBuffer) {
	b := &LogBuffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level})), b
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far: a LogBuffer is also a
// writer tests read while something streams into it.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Records returns the logged records as maps, failing t on a line that
// is not JSON.
func (b *LogBuffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		require.NoError(t, dec.Decode(&m))
		out = append(out, m)
	}
	return out
}

// WithMsg returns the records whose message is msg.
func (b *LogBuffer) WithMsg(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range b.Records(t) {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}
