package node_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

// --- endpoints -------------------------------------------------------------

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

// --- audit -----------------------------------------------------------------

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

// serveShort serves cfg with every http.Server timeout set to d, so a
// test can see them enforced (and handlers extend their own) in
// milliseconds. It returns the agent's address.
func serveShort(t *testing.T, cfg node.ServerConfig, d time.Duration) string {
	t.Helper()
	srv, err := node.NewServer(cfg)
	require.NoError(t, err)
	node.SetServerTimeouts(srv, d, d, d, d)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

// The production server sets every timeout.
func TestServerTimeoutsSet(t *testing.T) {
	srv, err := node.NewServer(node.ServerConfig{System: agenttest.NewSystem(t)})
	require.NoError(t, err)
	rh, r, w, idle := node.ServerTimeouts(srv)
	for name, d := range map[string]time.Duration{"read-header": rh, "read": r, "write": w, "idle": idle} {
		assert.Positive(t, d, name)
	}
}

// A slow-loris client, at the TLS handshake or in the request header, is
// cut off by the server's timeouts.
func TestSlowLorisCutOff(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	const timeout = 150 * time.Millisecond
	addr := serveShort(t, env.ServerConfig(), timeout)

	closedWithin := func(t *testing.T, c net.Conn) {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the server kept a slow connection open")
		}
	}
	t.Run("handshake", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		// Nothing is sent: no ClientHello.
		closedWithin(t, c)
	})
	t.Run("header", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, &tls.Config{
			MinVersion:   tls.VersionTLS13,
			RootCAs:      env.Bundle.Pool(),
			ServerName:   "127.0.0.1",
			Certificates: []tls.Certificate{env.ClientLeaf.TLSCertificate()},
		})
		require.NoError(t, err)
		defer c.Close()
		// Half a header, then one byte now and then, never the blank line.
		_, err = c.Write([]byte("GET /v1/info HTTP/1.1\r\nHost: x\r\n"))
		require.NoError(t, err)
		go func() {
			for range 100 {
				// The slow drip is the behaviour under test, not a wait
				// for something: a byte every third of the timeout.
				time.Sleep(timeout / 3)
				if _, err := c.Write([]byte("X")); err != nil {
					return
				}
			}
		}()
		closedWithin(t, c)
	})
	t.Run("idle", func(t *testing.T) {
		cl := rawClient(t, env, env.ClientLeaf)
		var conns atomicCounter
		closed := make(chan struct{}, 2)
		dial := conns.dial
		cl.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &peerCloseConn{Conn: c, closed: closed}, nil
		}
		get := func() {
			resp, err := cl.Get("https://" + addr + "/v1/info")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get()
		// The transport keeps reading the idle connection and closes it
		// when the server closes it after the idle timeout.
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the server kept an idle connection open")
		}
		get()
		assert.EqualValues(t, 2, conns.n.Load(), "the idle connection was closed by the server")
	})
}

// A release URL with an empty query ("?") or an empty fragment ("#")
// parses with no query and no fragment, but <ReleaseURL>/<version>/<asset>
// built from it is not a path under it: "?" turns the version and asset
// into a query, "#" drops them, so every download would fetch the base
// URL itself. The agent refuses such a URL, as the install helpers do.
func TestReleaseURLEmptyQueryOrFragmentRejected(t *testing.T) {
	sys := agenttest.NewSystem(t)
	for _, u := range []string{
		"https://example.com/k3s?",
		"https://example.com/k3s#",
		"https://example.com/k3s/?#",
		"https://example.com/?/k3s",
		"http://example.com#",
	} {
		_, err := node.NewServer(node.ServerConfig{System: sys, ReleaseURL: u})
		require.Error(t, err, u)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%s: %v", u, err)
		_, err = agent.InstallFiles(agent.InstallOptions{Init: agent.Systemd, ReleaseURL: u})
		assert.True(t, errcode.Is(err, errcode.Invalid), "install helpers refuse %s too: %v", u, err)
	}
}

// Every release URL the install helpers put on the agent's command line
// is one the agent starts with.
func TestInstallReleaseURLAcceptedByAgent(t *testing.T) {
	sys := agenttest.NewSystem(t)
	for _, u := range []string{
		"https://mirror.example.com:8443/k3s/%2Breleases/download;v=1/~user/(x)&y=z!*,@:",
		"http://[fd00::1]:8080/k3s",
		"https://mirror.example.com/k3s/releases/download/",
		"http://10.0.0.1",
	} {
		_, err := agent.InstallFiles(agent.InstallOptions{Init: agent.OpenRC, ReleaseURL: u})
		require.NoError(t, err, u)
		_, err = node.NewServer(node.ServerConfig{System: sys, ReleaseURL: u})
		assert.NoError(t, err, u)
	}
}

// peerCloseConn is a client's connection that signals on closed, once,
// when a read fails or the transport closes it. On an idle keep-alive
// connection either means the server closed it: the transport reads the
// server's close_notify (or EOF) and closes its end.
type peerCloseConn struct {
	net.Conn
	once   sync.Once
	closed chan<- struct{}
}

func (c *peerCloseConn) signal() { c.once.Do(func() { c.closed <- struct{}{} }) }

// Read reads from the connection and signals the first failure.
func (c *peerCloseConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.signal()
	}
	return n, err
}

// Close closes the connection and signals.
func (c *peerCloseConn) Close() error {
	c.signal()
	return c.Conn.Close()
}
