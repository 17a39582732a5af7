package node_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
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

func removeFile(name string) error { return os.Remove(name) }
