package node_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuditLine(t *testing.T) {
	log, buf := agenttest.NewLogger(-8)
	rel := agenttest.NewReleaseServer(t)
	rel.Publish("v1.31.2+k3s1")
	env := agenttest.Start(t, agenttest.Options{Logger: log, ReleaseURL: rel.URL()})
	ctx := t.Context()
	_, err := env.Client.Info(ctx)
	require.NoError(t, err)
	require.NoError(t, env.Client.Restart(ctx))
	call(t, env, http.MethodGet, "/v1/logs/k3s?lines=0", "")
	require.NoError(t, env.Client.Logs(ctx, 7, io.Discard))
	_, err = env.Client.Upgrade(ctx, "v1.31.2+k3s1")
	require.NoError(t, err)

	var lines []map[string]any
	require.Eventually(t, func() bool {
		lines = buf.WithMsg(t, "agent: request")
		return len(lines) == 5
	}, 5*time.Second, 10*time.Millisecond, "one audit line per request")
	byPath := map[string]map[string]any{}
	for _, l := range lines {
		byPath[l["method"].(string)+" "+l["path"].(string)] = l
		assert.Equal(t, pki.ControllerName, l["client"])
		assert.Contains(t, l, "duration")
		assert.Contains(t, l, "remote")
	}
	info := byPath["GET /v1/info"]
	require.NotNil(t, info)
	assert.Equal(t, "INFO", info["level"])
	assert.EqualValues(t, 200, info["status"])
	assert.Equal(t, "ok", info["outcome"])
	restart := byPath["POST /v1/service/k3s/restart"]
	require.NotNil(t, restart)
	assert.EqualValues(t, 200, restart["status"])
	var logs []map[string]any
	for _, l := range lines {
		if l["path"] == "/v1/logs/k3s" {
			logs = append(logs, l)
		}
	}
	require.Len(t, logs, 2)
	bad, good := logs[0], logs[1]
	if bad["status"] == float64(200) {
		bad, good = good, bad
	}
	assert.EqualValues(t, 400, bad["status"])
	assert.Equal(t, string(errcode.Invalid), bad["outcome"])
	assert.Equal(t, "WARN", bad["level"])
	assert.EqualValues(t, 200, good["status"])
	assert.EqualValues(t, 7, good["lines"])
	up := byPath["POST /v1/upgrade/k3s"]
	require.NotNil(t, up)
	assert.Equal(t, "upgraded", up["outcome"])
	assert.Equal(t, "v1.31.2+k3s1", up["version"])
	assert.Equal(t, agenttest.DefaultVersion, up["from"])
}

func TestAuditLineInProcess(t *testing.T) {
	log, buf := agenttest.NewLogger(0)
	srv, err := node.NewServer(node.ServerConfig{System: agenttest.NewSystem(t), Logger: log})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/info", nil))
	assert.Equal(t, 200, rec.Code)
	lines := buf.WithMsg(t, "agent: request")
	require.Len(t, lines, 1)
	assert.Equal(t, "-", lines[0]["client"])

	// Without credentials the server cannot be served.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = srv.Serve(ln)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
}

// A handshake the agent rejects never becomes a request, so it has no
// "agent: request" audit line; it is logged, at WARN, by the server's
// error log with the peer's address and the reason. A request refused
// after the handshake (a CA dropped while the connection was open) gets
// an ordinary audit line naming the client.
func TestRejectionsAreLogged(t *testing.T) {
	log, buf := agenttest.NewLogger(-8)
	env := agenttest.Start(t, agenttest.Options{Logger: log})

	// Handshake rejection: the node's server certificate as a client.
	c := rawClient(t, env, env.ServerLeaf)
	_, err := c.Get("https://" + env.Addr + "/v1/info")
	require.Error(t, err)
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, r := range buf.Records(t) {
			if m, _ := r["msg"].(string); strings.Contains(m, "TLS handshake error from 127.0.0.1:") {
				line = r
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "WARN", line["level"])
	assert.Contains(t, line["msg"], "incompatible key usage")
	assert.Empty(t, buf.WithMsg(t, "agent: request"))

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
		lines = buf.WithMsg(t, "agent: request")
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
