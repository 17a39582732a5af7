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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMTLSValidPairAccepted(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "node-1", info.Hostname)
}

// startLogged starts an agent whose log is captured.
func startLogged(t *testing.T) (*agenttest.Env, *agenttest.LogBuffer) {
	log, buf := agenttest.NewLogger(-8)
	return agenttest.Start(t, agenttest.Options{Logger: log}), buf
}

// requireRejected asserts that a client presenting leaf cannot call the
// agent, that the rejection is reported as UNAUTHORIZED, and that the
// server logged a handshake error containing why.
func requireRejected(t *testing.T, env *agenttest.Env, buf *agenttest.LogBuffer, leaf *pki.Leaf, why string) {
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
		for _, r := range buf.Records(t) {
			if m, _ := r["msg"].(string); strings.Contains(m, "TLS handshake error") && strings.Contains(m, why) {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "server logs the handshake failure: %s: %v", why, buf.Records(t))
	assert.Empty(t, buf.WithMsg(t, "agent: request"), "no request got through")
}

func TestMTLSNoClientCertificateRejected(t *testing.T) {
	env, buf := startLogged(t)
	_, err := rawClient(t, env, nil).Get("https://" + env.Addr + "/v1/info")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate required")
	require.Eventually(t, func() bool {
		return strings.Contains(fmt.Sprint(buf.Records(t)), "client didn't provide a certificate")
	}, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, buf.WithMsg(t, "agent: request"))
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
		return strings.Contains(fmt.Sprint(buf.Records(t)), "certificate signed by unknown authority")
	}, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, buf.WithMsg(t, "agent: request"))
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
		info, err := clientWith(leaf, overlap).Info(ctx)
		require.NoError(t, err, name)
		assert.Equal(t, overlap.Fingerprints(), info.AcceptedCAs, "Info reports the CAs accepted since the reload")
		assert.Equal(t, pki.Fingerprint(env.ServerLeaf.Cert), info.ServerCert)
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
	info, err := clientWith(newClient, final).Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{pki.Fingerprint(newCA.Cert)}, info.AcceptedCAs)
	assert.Equal(t, pki.Fingerprint(newServer.Cert), info.ServerCert)
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
func TestResumedSessionAfterCADropRejected(t *testing.T) {
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
func TestKeepAliveConnectionAfterCADropRejected(t *testing.T) {
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
func TestKeepAliveConnectionAfterClientCertExpiryRejected(t *testing.T) {
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
func TestServerWithClientOnlyCertificateRejected(t *testing.T) {
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
