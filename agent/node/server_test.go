package node_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// --- the mTLS matrix: every case is its own test -------------------------

func TestMTLSValidPairAccepted(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "node-1", info.Hostname)
}

// startLogged starts an agent whose log is captured.
func startLogged(t *testing.T) (*agenttest.Env, *logBuffer) {
	log, buf := newLogger(-8)
	return agenttest.Start(t, agenttest.Options{Logger: log}), buf
}

// requireRejected asserts that a client presenting leaf cannot call the
// agent, that the rejection is reported as UNAUTHORIZED, and that the
// server logged a handshake error containing why.
func requireRejected(t *testing.T, env *agenttest.Env, buf *logBuffer, leaf *pki.Leaf, why string) {
	t.Helper()
	key, err := leaf.KeyPEM()
	require.NoError(t, err)
	c := env.NewClient(t, func(c *agent.ClientConfig) {
		c.CertPEM, c.KeyPEM = leaf.CertPEM(), key
	})
	_, err = c.Info(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
	require.Eventually(t, func() bool {
		for _, r := range buf.records(t) {
			if m, _ := r["msg"].(string); strings.Contains(m, "TLS handshake error") && strings.Contains(m, why) {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "server logs the handshake failure: %s: %v", why, buf.records(t))
	assert.Empty(t, buf.withMsg(t, "agent: request"), "no request got through")
}

func TestMTLSNoClientCertificateRejected(t *testing.T) {
	env, buf := startLogged(t)
	_, err := rawClient(t, env, nil).Get("https://" + env.Addr + "/v1/info")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate required")
	require.Eventually(t, func() bool {
		return strings.Contains(fmt.Sprint(buf.records(t)), "client didn't provide a certificate")
	}, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, buf.withMsg(t, "agent: request"))
}

func TestMTLSOtherCARejected(t *testing.T) {
	env, buf := startLogged(t)
	other, err := pki.NewCA("another cluster")
	require.NoError(t, err)
	leaf, err := other.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	// crypto/tls only sends a certificate issued by a CA the server asks
	// for, so agent.Client sends none ...
	requireRejected(t, env, buf, leaf, "client didn't provide a certificate")
	// ... and one sent anyway fails verification.
	c := rawClient(t, env, nil)
	c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		tc := leaf.TLSCertificate()
		return &tc, nil
	}
	_, err = c.Get("https://" + env.Addr + "/v1/info")
	require.Error(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(fmt.Sprint(buf.records(t)), "certificate signed by unknown authority")
	}, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, buf.withMsg(t, "agent: request"))
}

func TestMTLSExpiredRejected(t *testing.T) {
	env, buf := startLogged(t)
	past := time.Now().Add(-2 * time.Hour)
	leaf, err := env.CA.IssueClient(pki.ControllerName, pki.WithClock(func() time.Time { return past }), pki.WithValidity(time.Hour))
	require.NoError(t, err)
	require.True(t, leaf.Cert.NotAfter.Before(time.Now()))
	requireRejected(t, env, buf, leaf, "expired")
}

func TestMTLSNotYetValidRejected(t *testing.T) {
	env, buf := startLogged(t)
	future := time.Now().Add(time.Hour)
	leaf, err := env.CA.IssueClient(pki.ControllerName, pki.WithClock(func() time.Time { return future }))
	require.NoError(t, err)
	require.True(t, leaf.Cert.NotBefore.After(time.Now()))
	requireRejected(t, env, buf, leaf, "not yet valid")
}

func TestMTLSServerCertificateAsClientRejected(t *testing.T) {
	env, buf := startLogged(t)
	// The node's own certificate: signed by the right CA, EKU ServerAuth only.
	requireRejected(t, env, buf, env.ServerLeaf, "incompatible key usage")
}

// A certificate without any extended key usage satisfies crypto/tls's
// own check; the agent insists on ClientAuth.
func TestMTLSCertificateWithoutEKURejected(t *testing.T) {
	env, buf := startLogged(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(99), Subject: pkix.Name{CommonName: "no-eku"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, env.CA.Cert, &key.PublicKey, env.CA.Key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	requireRejected(t, env, buf, &pki.Leaf{Cert: cert, Key: key}, "lacks the ClientAuth extended key usage")
}

func TestMTLSOldTLSVersionRejected(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	c := rawClient(t, env, env.ClientLeaf)
	tr := c.Transport.(*http.Transport)
	tr.TLSClientConfig.MinVersion = tls.VersionTLS12
	tr.TLSClientConfig.MaxVersion = tls.VersionTLS12
	_, err := c.Get("https://" + env.Addr + "/v1/info")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "protocol version")
}

// A CA rotation: during the overlap, leaves of both CAs are accepted in
// both directions; once the old CA is dropped, its client certificate is
// rejected.
func TestMTLSRotatedOutCARejected(t *testing.T) {
	ctx := t.Context()
	env := agenttest.Start(t, agenttest.Options{})
	oldCA := env.CA
	newCA, overlap, err := pki.Rotate(env.Bundle, "agenttest CA")
	require.NoError(t, err)
	oldClient := env.ClientLeaf
	newClient, err := newCA.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	newServer, err := newCA.IssueServer(agenttest.NodeName, []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	newServerKey, err := newServer.KeyPEM()
	require.NoError(t, err)

	clientWith := func(leaf *pki.Leaf, b pki.Bundle) *agent.Client {
		key, err := leaf.KeyPEM()
		require.NoError(t, err)
		return env.NewClient(t, func(c *agent.ClientConfig) {
			c.CertPEM, c.KeyPEM, c.CABundle = leaf.CertPEM(), key, b.PEM()
		})
	}

	// Step 1: the agent accepts both CAs, still with its old server certificate.
	oldServerKey, _ := env.ServerLeaf.KeyPEM()
	require.NoError(t, env.Server.Reload(overlap.PEM(), env.ServerLeaf.CertPEM(), oldServerKey))
	for name, leaf := range map[string]*pki.Leaf{"old client": oldClient, "new client": newClient} {
		_, err := clientWith(leaf, overlap).Info(ctx)
		require.NoError(t, err, name)
	}
	// Step 2: the node gets a server certificate from the new CA; a
	// controller that already trusts both CAs keeps working.
	require.NoError(t, env.Server.Reload(overlap.PEM(), newServer.CertPEM(), newServerKey))
	for name, leaf := range map[string]*pki.Leaf{"old client": oldClient, "new client": newClient} {
		_, err := clientWith(leaf, overlap).Info(ctx)
		require.NoError(t, err, name)
	}
	// A controller that trusts only the old CA no longer accepts the node.
	_, err = clientWith(newClient, pki.NewBundle(oldCA.Cert)).Info(ctx)
	require.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)

	// Step 3: the old CA is dropped.
	final := overlap.Without(oldCA.Cert)
	require.NoError(t, env.Server.Reload(final.PEM(), newServer.CertPEM(), newServerKey))
	_, err = clientWith(newClient, final).Info(ctx)
	require.NoError(t, err)
	_, err = clientWith(oldClient, final).Info(ctx)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
}

func TestMTLSServerNameMismatchRejected(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	cases := map[string]func(*agent.ClientConfig){
		"another node name": func(c *agent.ClientConfig) { c.ServerName = "node-2" },
		"another IP":        func(c *agent.ClientConfig) { c.ServerName = "10.9.9.9" },
		"dialled by a name the certificate lacks": func(c *agent.ClientConfig) {
			_, port, _ := net.SplitHostPort(c.Address)
			c.Address = net.JoinHostPort("localhost", port)
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := env.NewClient(t, edit).Info(t.Context())
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
			var cve *tls.CertificateVerificationError
			assert.True(t, errors.As(err, &cve), "%v", err)
		})
	}
	// The node's name does match.
	_, err := env.NewClient(t, func(c *agent.ClientConfig) { c.ServerName = agenttest.NodeName }).Info(t.Context())
	require.NoError(t, err)
}

func TestMTLSServerFromAnotherCARejected(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	other, err := pki.NewCA("impostor")
	require.NoError(t, err)
	_, err = env.NewClient(t, func(c *agent.ClientConfig) { c.CABundle = pki.NewBundle(other.Cert).PEM() }).Info(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
}

// --- endpoints -------------------------------------------------------------

func TestServerInfo(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.Facts{Hostname: "node-1", OS: "linux", Arch: "amd64", Kernel: "6.1.0-fake", Distro: "Fake Linux 1.0", Init: agent.Systemd}, info.Facts)
	assert.Equal(t, agenttest.DefaultVersion, info.K3sVersion)
	assert.Equal(t, agent.RoleServer, info.Role)
	assert.Equal(t, agent.StateActive, info.ServiceState)
	assert.Equal(t, agenttest.AgentVersion, info.AgentVersion)
	for _, c := range []string{agent.CapInfo, agent.CapLogs, agent.CapService, agent.CapUpgrade, agent.CapRollback} {
		assert.True(t, info.Has(c), c)
	}
	assert.False(t, info.Has("exec"))
	assert.Empty(t, info.Problems)

	// The wire format is flat.
	_, _, body := call(t, env, http.MethodGet, "/v1/info", "")
	for _, k := range []string{`"hostname":"node-1"`, `"init":"systemd"`, `"k3sVersion":`, `"role":"server"`, `"serviceState":"active"`, `"agentVersion":`, `"capabilities":[`} {
		assert.Contains(t, string(body), k)
	}
}

func TestServerInfoPartial(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	require.NoError(t, removeFile(env.System.K3sBinary()))
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err, "a broken k3s does not make /v1/info fail")
	assert.Empty(t, info.K3sVersion)
	require.Len(t, info.Problems, 1)
	assert.Contains(t, info.Problems[0], "k3s version")

	env.System.SetRole(agent.RoleNone)
	info, err = env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.RoleNone, info.Role)
	assert.Equal(t, agent.StateUnknown, info.ServiceState)
	assert.Empty(t, info.Problems)
}

func TestServerService(t *testing.T) {
	ctx := t.Context()
	env := agenttest.Start(t, agenttest.Options{})
	require.NoError(t, env.Client.Stop(ctx))
	info, err := env.Client.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StateInactive, info.ServiceState)
	require.NoError(t, env.Client.Start(ctx))
	require.NoError(t, env.Client.Restart(ctx))
	assert.Equal(t, []agent.ServiceAction{agent.Stop, agent.Start, agent.Restart}, env.System.Actions())

	_, _, body := call(t, env, http.MethodPost, "/v1/service/k3s/restart", "")
	assert.JSONEq(t, `{"action":"restart","serviceState":"active"}`, string(body))

	env.System.FailService(errors.New("systemctl: job failed"))
	err = env.Client.Restart(ctx)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Internal), "%v", err)
	assert.Contains(t, err.Error(), "systemctl: job failed")

	env.System.SetRole(agent.RoleNone)
	assert.True(t, errcode.Is(env.Client.Restart(ctx), errcode.NotFound))
	assert.True(t, errcode.Is(env.Client.Service(ctx, "reload"), errcode.Invalid), "checked by the client")
}

func TestServerErrors(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	cases := []struct {
		method, path, body string
		status             int
		code               errcode.Code
	}{
		{"GET", "/v1/nope", "", 404, errcode.NotFound},
		{"GET", "/v1/exec", "", 404, errcode.NotFound},
		{"POST", "/v1/service/k3s/reload", "", 404, errcode.NotFound},
		{"GET", "/v1/service/k3s/restart", "", 405, errcode.Invalid},
		{"POST", "/v1/info", "", 405, errcode.Invalid},
		{"DELETE", "/v1/logs/k3s", "", 405, errcode.Invalid},
		{"GET", "/v1/upgrade/k3s", "", 405, errcode.Invalid},
		{"POST", "/v1/upgrade/k3s", `{"version":"v1.2.3+k3s1","extra":1}`, 400, errcode.Invalid},
		{"POST", "/v1/upgrade/k3s", `{"version":"v1.2.3+k3s1"} {}`, 400, errcode.Invalid},
		{"POST", "/v1/upgrade/k3s", `{"version":"` + strings.Repeat("1", 5000) + `"}`, 413, errcode.Invalid},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, ae, _ := call(t, env, tc.method, tc.path, tc.body)
			assert.Equal(t, tc.status, ae.Status)
			assert.Equal(t, string(tc.code), ae.Code, ae.Message)
			assert.NotEmpty(t, ae.Message)
			assert.Equal(t, agenttest.AgentVersion, resp.Header.Get(agent.HeaderAgentVersion))
		})
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", "https://"+env.Addr+"/v1/upgrade/k3s", strings.NewReader(`{"version":"v1.2.3+k3s1"}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := rawClient(t, env, env.ClientLeaf).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}

// --- logs --------------------------------------------------------------

func TestLogsLinesOutOfRange(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	for _, q := range []string{"lines=0", "lines=5001", "lines=-1", "lines=abc", "lines=", "lines=%2B5", "lines=1e3",
		"lines=99999999999999999999", "lines=1&lines=2", "lines=1;x", "other=1", "lines=%zz"} {
		t.Run(q, func(t *testing.T) {
			_, ae, _ := call(t, env, http.MethodGet, "/v1/logs/k3s?"+q, "")
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, string(errcode.Invalid), ae.Code)
		})
	}
	for _, n := range []int{-1, 5001} {
		err := env.Client.Logs(t.Context(), n, io.Discard)
		assert.True(t, errcode.Is(err, errcode.Invalid), "client checks %d: %v", n, err)
	}
}

func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %05d: k3s did something", i+1)
	}
	return lines
}

func TestLogsFiveThousandLinesWhole(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	all := numbered(6000)
	env.System.SetLogs(all)
	var buf bytes.Buffer
	require.NoError(t, env.Client.Logs(t.Context(), 5000, &buf))
	want := strings.Join(all[1000:], "\n") + "\n"
	require.Equal(t, len(want), buf.Len())
	require.Equal(t, want, buf.String(), "whole and in order")

	buf.Reset()
	require.NoError(t, env.Client.Logs(t.Context(), 0, &buf))
	assert.Equal(t, agent.DefaultLogLines, strings.Count(buf.String(), "\n"), "default")
	assert.True(t, strings.HasPrefix(buf.String(), all[5900]))

	resp, _, body := call(t, env, http.MethodGet, "/v1/logs/k3s?lines=3", "")
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, strings.Join(all[5997:], "\n")+"\n", string(body))
}

// gatedLogs writes one line, then waits until the test has read it before
// writing the rest: the first line can only arrive if the server streams.
type gatedLogs struct {
	*agenttest.System
	gate chan struct{}
}

func (g gatedLogs) Logs(ctx context.Context, n int, w io.Writer) error {
	if _, err := io.WriteString(w, "first\n"); err != nil {
		return err
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("first line never read: the response is not streamed")
	}
	_, err := io.WriteString(w, "second\n")
	return err
}

func TestLogsStreamed(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	cfg := env.ServerConfig()
	gate := make(chan struct{})
	cfg.System = gatedLogs{System: env.System, gate: gate}
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- c.Logs(t.Context(), 10, pw); pw.Close() }()
	first := make([]byte, len("first\n"))
	_, err := io.ReadFull(pr, first)
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(first))
	close(gate)
	rest, err := io.ReadAll(pr)
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(rest))
	require.NoError(t, <-done)
}

func TestLogsFailure(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	// Before anything was written: an ordinary error response.
	env.System.SetLogs(nil)
	env.System.FailLogs(errcode.New(errcode.Transient, "journalctl: busy"))
	err := env.Client.Logs(t.Context(), 10, io.Discard)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)

	// After the stream started: the Openctl-Error trailer.
	env.System.SetLogs(numbered(20))
	env.System.FailLogs(errors.New("journalctl: killed"))
	var buf bytes.Buffer
	err = env.Client.Logs(t.Context(), 10, &buf)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Internal), "%v", err)
	assert.Contains(t, err.Error(), "journalctl: killed")
	assert.Equal(t, 10, strings.Count(buf.String(), "\n"), "the lines that were sent are kept")
}

// --- audit -----------------------------------------------------------------

func TestAuditLine(t *testing.T) {
	log, buf := newLogger(-8)
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
		lines = buf.withMsg(t, "agent: request")
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
	log, buf := newLogger(0)
	srv, err := node.NewServer(node.ServerConfig{System: agenttest.NewSystem(t), Logger: log})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/info", nil))
	assert.Equal(t, 200, rec.Code)
	lines := buf.withMsg(t, "agent: request")
	require.Len(t, lines, 1)
	assert.Equal(t, "-", lines[0]["client"])

	// Without credentials the server cannot be served.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = srv.Serve(ln)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
}

func TestNewServerErrors(t *testing.T) {
	sys := agenttest.NewSystem(t)
	ca, _ := pki.NewCA("x")
	leaf, _ := ca.IssueServer("n", nil)
	key, _ := leaf.KeyPEM()
	other, _ := ca.IssueServer("m", nil)
	otherKey, _ := other.KeyPEM()
	bundle := pki.NewBundle(ca.Cert).PEM()
	cases := map[string]node.ServerConfig{
		"no system":         {},
		"bad release URL":   {System: sys, ReleaseURL: "ftp://example.com"},
		"release URL query": {System: sys, ReleaseURL: "https://example.com/r?x=1"},
		"no bundle":         {System: sys, CertPEM: leaf.CertPEM(), KeyPEM: key},
		"leaf as bundle":    {System: sys, CABundle: leaf.CertPEM(), CertPEM: leaf.CertPEM(), KeyPEM: key},
		"key mismatch":      {System: sys, CABundle: bundle, CertPEM: leaf.CertPEM(), KeyPEM: otherKey},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := node.NewServer(cfg)
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
		})
	}
	cfg := node.ServerConfig{System: sys, CABundle: bundle, CertPEM: leaf.CertPEM(), KeyPEM: key}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		assert.NotContains(t, s, "PRIVATE KEY")
	}
}

// Concurrent Info calls through one client.
func TestServerConcurrentInfo(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := env.Client.Info(t.Context())
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}
