package node_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// A handshake the agent rejects never becomes a request, so it has no
// "agent: request" audit line; it is logged, at WARN, by the server's
// error log with the peer's address and the reason. A request refused
// after the handshake (a CA dropped while the connection was open) gets
// an ordinary audit line naming the client.
func TestReviewRejectionsAreLogged(t *testing.T) {
	log, buf := newLogger(-8)
	env := agenttest.Start(t, agenttest.Options{Logger: log})

	// Handshake rejection: the node's server certificate as a client.
	c := rawClient(t, env, env.ServerLeaf)
	_, err := c.Get("https://" + env.Addr + "/v1/info")
	require.Error(t, err)
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, r := range buf.records(t) {
			if m, _ := r["msg"].(string); strings.Contains(m, "TLS handshake error from 127.0.0.1:") {
				line = r
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "WARN", line["level"])
	assert.Contains(t, line["msg"], "incompatible key usage")
	assert.Empty(t, buf.withMsg(t, "agent: request"))

	// Refusal after the handshake.
	c = rawClient(t, env, env.ClientLeaf)
	resp, err := c.Get("https://" + env.Addr + "/v1/info")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rotateToNewCA(t, env)
	resp, err = c.Get("https://" + env.Addr + "/v1/logs/k3s?lines=3")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	var lines []map[string]any
	require.Eventually(t, func() bool {
		lines = buf.withMsg(t, "agent: request")
		return len(lines) == 2
	}, 5*time.Second, 10*time.Millisecond)
	refused := lines[1]
	assert.Equal(t, pki.ControllerName, refused["client"])
	assert.Equal(t, "/v1/logs/k3s", refused["path"])
	assert.EqualValues(t, 403, refused["status"])
	assert.Equal(t, string(errcode.Unauthorized), refused["outcome"])
	assert.Equal(t, "WARN", refused["level"])
	assert.NotContains(t, refused, "lines", "the handler never ran")
}
