package node_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/pki"
)

// rawClient is a plain HTTPS client of env's agent presenting cert (none
// if nil) and trusting env's CA bundle, for requests agent.Client would
// refuse to send.
func rawClient(t *testing.T, env *agenttest.Env, cert *pki.Leaf) *http.Client {
	t.Helper()
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    env.Bundle.Pool(),
		ServerName: "127.0.0.1",
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.TLSCertificate()}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// apiError is a decoded error response.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

// call sends a request with the controller certificate and decodes an
// error body if there is one.
func call(t *testing.T, env *agenttest.Env, method, path, body string) (*http.Response, apiError, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "https://"+env.Addr+path, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := rawClient(t, env, env.ClientLeaf).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	ae := apiError{Status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "error bodies are JSON: %s", data)
		require.NoError(t, json.Unmarshal(data, &ae), "%s", data)
	}
	return resp, ae, data
}

// logBuffer is a concurrency-safe buffer for a JSON slog handler.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the logged records as maps.
func (b *logBuffer) records(t *testing.T) []map[string]any {
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

// withMsg returns the records with message msg.
func (b *logBuffer) withMsg(t *testing.T, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range b.records(t) {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func newLogger(level slog.Level) (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level})), b
}

var _ io.Writer = (*logBuffer)(nil)

func removeFile(name string) error { return os.Remove(name) }
