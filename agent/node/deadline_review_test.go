package node_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/node"
)

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
func TestReviewServerTimeoutsSet(t *testing.T) {
	srv, err := node.NewServer(node.ServerConfig{System: agenttest.NewSystem(t)})
	require.NoError(t, err)
	rh, r, w, idle := node.ServerTimeouts(srv)
	for name, d := range map[string]time.Duration{"read-header": rh, "read": r, "write": w, "idle": idle} {
		assert.Positive(t, d, name)
	}
}

// An upgrade whose download outlasts the server's write (and read)
// timeout still gets its answer: the handler extends its own deadline.
func TestReviewUpgradeOutlastsWriteTimeout(t *testing.T) {
	rel := agenttest.NewReleaseServer(t)
	rel.Publish(newVersion)
	env := agenttest.Start(t, agenttest.Options{ReleaseURL: rel.URL()})
	const timeout = 150 * time.Millisecond
	addr := serveShort(t, env.ServerConfig(), timeout)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	waiting, release := rel.Hold()
	done := make(chan error, 1)
	var res *agent.UpgradeResult
	go func() {
		var err error
		res, err = c.Upgrade(t.Context(), newVersion)
		done <- err
	}()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the upgrade never reached the release server")
	}
	time.Sleep(3 * timeout) // the download is held past the server's timeouts
	release()
	require.NoError(t, <-done)
	assert.Equal(t, agent.UpgradeUpgraded, res.Status)
}

// slowLogs writes a line, waits past the server's write timeout, and
// writes another.
type slowLogs struct {
	*agenttest.System
	pause time.Duration
}

func (s slowLogs) Logs(ctx context.Context, n int, w io.Writer) error {
	if _, err := io.WriteString(w, "first\n"); err != nil {
		return err
	}
	select {
	case <-time.After(s.pause):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := io.WriteString(w, "second\n")
	return err
}

// A log stream that outlasts the server's write timeout arrives whole.
func TestReviewLogsOutlastWriteTimeout(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	const timeout = 150 * time.Millisecond
	cfg := env.ServerConfig()
	cfg.System = slowLogs{System: env.System, pause: 3 * timeout}
	addr := serveShort(t, cfg, timeout)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })
	var sb strings.Builder
	require.NoError(t, c.Logs(t.Context(), 10, &sb))
	assert.Equal(t, "first\nsecond\n", sb.String())
}

// A slow-loris client, at the TLS handshake or in the request header, is
// cut off by the server's timeouts.
func TestReviewSlowLorisCutOff(t *testing.T) {
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
		cl.Transport.(*http.Transport).DialContext = conns.dial
		for range 2 {
			resp, err := cl.Get("https://" + addr + "/v1/info")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			time.Sleep(3 * timeout) // past the idle timeout
		}
		assert.EqualValues(t, 2, conns.n.Load(), "the idle connection was closed by the server")
	})
}
