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
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// rotateToNewCA reloads env's agent with a bundle holding only a new CA
// and a server certificate from it, and returns the new CA.
func rotateToNewCA(t *testing.T, env *agenttest.Env) *pki.CA {
	t.Helper()
	newCA, err := pki.NewCA("rotated CA")
	require.NoError(t, err)
	srv, err := newCA.IssueServer(agenttest.NodeName, []net.IP{net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	key, err := srv.KeyPEM()
	require.NoError(t, err)
	require.NoError(t, env.Server.Reload(pki.NewBundle(newCA.Cert).PEM(), srv.CertPEM(), key))
	return newCA
}

// A client whose certificate was issued by a CA that has since been
// dropped cannot come back by resuming a TLS session from before the drop.
func TestReviewResumedSessionAfterCADropRejected(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	cache := tls.NewLRUClientSessionCache(8)
	dial := func(roots *x509.CertPool) (*tls.Conn, error) {
		return tls.Dial("tcp", env.Addr, &tls.Config{
			MinVersion:         tls.VersionTLS13,
			RootCAs:            roots,
			ServerName:         "127.0.0.1",
			Certificates:       []tls.Certificate{env.ClientLeaf.TLSCertificate()},
			ClientSessionCache: cache,
		})
	}
	request := func(c *tls.Conn) error {
		if _, err := c.Write([]byte("GET /v1/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
			return err
		}
		// In TLS 1.3 the client learns of a rejection on its first read;
		// reading also stores a session ticket, were one sent.
		b, err := io.ReadAll(c)
		if err == nil && !bytes.HasPrefix(b, []byte("HTTP/1.1 200 ")) {
			err = fmt.Errorf("refused: %.40q", b)
		}
		return err
	}
	c, err := dial(env.Bundle.Pool())
	require.NoError(t, err)
	require.NoError(t, request(c))
	c.Close()

	c, err = dial(env.Bundle.Pool())
	require.NoError(t, err)
	require.NoError(t, request(c))
	assert.False(t, c.ConnectionState().DidResume, "the agent issues no session tickets")
	c.Close()

	newCA := rotateToNewCA(t, env)
	// The client trusts both CAs, so only the agent's decision matters.
	c, err = dial(pki.NewBundle(env.CA.Cert, newCA.Cert).Pool())
	if err == nil {
		err = request(c)
		assert.False(t, c.ConnectionState().DidResume)
		c.Close()
	}
	require.Error(t, err, "the old CA's client is rejected after the drop")
}

// countingDial counts the TCP connections an http.Transport opens.
func countingDial(n *atomic.Int32) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return d.DialContext(ctx, network, addr)
	}
}

// A keep-alive connection opened with a client certificate of a CA that
// is then dropped must not keep working: a drop applies to every later
// request, not only to new connections (pki.Rotate: "certificates signed
// by the old CA are rejected from now on").
func TestReviewKeepAliveConnectionAfterCADropRejected(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	c := rawClient(t, env, env.ClientLeaf)
	var conns atomic.Int32
	c.Transport.(*http.Transport).DialContext = countingDial(&conns)
	get := func() *http.Response {
		resp, err := c.Get("https://" + env.Addr + "/v1/info")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusOK, get().StatusCode)
	_, err := env.Client.Info(t.Context()) // agent.Client opens its own connection
	require.NoError(t, err)

	rotateToNewCA(t, env)
	resp := get()
	assert.EqualValues(t, 1, conns.Load(), "the request reused the connection opened before the drop")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a dropped CA's client is refused on a live connection")
	assert.True(t, resp.Close, "and the connection is closed")

	_, err = env.Client.Info(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
}

// A keep-alive connection must not outlive the client certificate it was
// opened with.
func TestReviewKeepAliveConnectionAfterClientCertExpiryRejected(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	env := agenttest.Start(t, agenttest.Options{Now: now})
	short, err := env.CA.IssueClient(pki.ControllerName, pki.WithValidity(time.Hour))
	require.NoError(t, err)
	c := rawClient(t, env, short)
	get := func() int {
		resp, err := c.Get("https://" + env.Addr + "/v1/info")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get())
	offset.Store(int64(2 * time.Hour))
	assert.Equal(t, http.StatusForbidden, get(), "the certificate expired while the connection was open")
}

// atomicCounter counts the TCP connections an http.Transport opens (use
// its dial as the transport's DialContext).
type atomicCounter struct{ n atomic.Int32 }

func (c *atomicCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return countingDial(&c.n)(ctx, network, addr)
}

// From the client side: an agent presenting a certificate from the right
// CA, with the right IP, but for ClientAuth only (the controller's kind
// of certificate) is refused for its key usage.
func TestReviewServerWithClientOnlyCertificateRejected(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: agenttest.NodeName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{agenttest.NodeName},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, env.CA.Cert, &key.PublicKey, env.CA.Key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	leaf := &pki.Leaf{Cert: cert, Key: key}
	keyPEM, err := leaf.KeyPEM()
	require.NoError(t, err)
	cfg := env.ServerConfig()
	cfg.CertPEM, cfg.KeyPEM = leaf.CertPEM(), keyPEM
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })
	_, err = c.Info(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
	assert.Contains(t, err.Error(), "incompatible key usage")
}
