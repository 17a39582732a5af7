package proxmox

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/secret"
)

// logBuf is a concurrency-safe buffer for a slog handler.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestLogger() (*slog.Logger, *logBuf) {
	buf := &logBuf{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// simContext is a context for srv that pins its certificate.
func simContext(srv *proxmoxtest.Server) Context {
	id, sec := srv.Token()
	return Context{Endpoint: srv.URL(), TokenID: id, TokenSecret: secret.New(sec), Fingerprint: srv.Fingerprint()}
}

// fastSim is a simulator that answers a bad token at once (real PVE
// waits 3 s).
func fastSim(t *testing.T, opts ...proxmoxtest.Option) *proxmoxtest.Server {
	t.Helper()
	return proxmoxtest.NewTestServer(t, append([]proxmoxtest.Option{proxmoxtest.WithLatencies(proxmoxtest.Latencies{})}, opts...)...)
}

func dialT(t *testing.T, name string, c Context, log *slog.Logger) *conn {
	t.Helper()
	cn, err := dial(name, c, log)
	require.NoError(t, err)
	t.Cleanup(cn.close)
	return cn
}

// assertNoSecret checks that none of the renderings of err, nor the log,
// holds s.
func assertNoSecret(t *testing.T, s string, err error, logs ...string) {
	t.Helper()
	require.NotEmpty(t, s)
	if err != nil {
		for _, r := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			assert.NotContains(t, r, s, "secret in error")
		}
	}
	for _, l := range logs {
		assert.NotContains(t, l, s, "secret in log")
	}
}

func TestDialPinnedFingerprint(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	ctx := context.Background()
	log, logs := newTestLogger()

	for name, fp := range map[string]string{
		"as Proxmox shows it": srv.Fingerprint(),
		"bare lower-case":     strings.ToLower(strings.ReplaceAll(srv.Fingerprint(), ":", "")),
		"openssl output":      "sha256 Fingerprint=" + srv.Fingerprint(),
	} {
		c := simContext(srv)
		c.Fingerprint = fp
		cn := dialT(t, "lab", c, log)
		require.NoError(t, cn.verify(ctx), name)
	}
	assert.Equal(t, 3, srv.RequestCount("GET /version"))
	_, sec := srv.Token()
	assertNoSecret(t, sec, nil, logs.String())
	assert.NotContains(t, logs.String(), "level=WARN")
}

func TestDialWrongFingerprintRefused(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	ctx := context.Background()
	c := simContext(srv)
	pin, err := ParseFingerprint(srv.Fingerprint())
	require.NoError(t, err)
	pin[0] ^= 0xff
	c.Fingerprint = formatFingerprint(pin)
	cn := dialT(t, "lab", c, nil)

	err = cn.verify(ctx)
	require.Error(t, err)
	var te *TLSError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "lab", te.Context)
	assert.True(t, errcode.Is(err, errcode.Unauthorized))
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	assert.False(t, errcode.Retryable(err), "a TLS failure is not retried")
	assert.Contains(t, err.Error(), "certificate fingerprint mismatch: server presented "+srv.Fingerprint()+", expected "+c.Fingerprint)
	assert.Contains(t, err.Error(), `context "lab"`)
	assert.Zero(t, srv.RequestCount("GET /version"), "no request reaches a server that is not the pinned one")

	// Any other call fails the same way, and classify keeps it
	// Unauthorized rather than a retryable network failure.
	_, err = cn.listNodes(ctx)
	require.Error(t, err)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(classify(err)))
	assert.False(t, isTransient(classify(err)))
	assert.Contains(t, err.Error(), "fingerprint mismatch")
	_, sec := srv.Token()
	assertNoSecret(t, sec, err)
}

func TestDialSelfSignedWithoutPinRefused(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	c := simContext(srv)
	c.Fingerprint = "" // system roots
	cn := dialT(t, "lab", c, nil)

	err := cn.verify(context.Background())
	require.Error(t, err)
	var te *TLSError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	assert.False(t, errcode.Retryable(err))
	var cve *tls.CertificateVerificationError
	assert.ErrorAs(t, err, &cve, "the crypto/tls error stays reachable")
	msg := err.Error()
	assert.Contains(t, msg, "certificate signed by unknown authority")
	assert.Contains(t, msg, "self-signed")
	assert.Contains(t, msg, "fingerprint "+srv.Fingerprint(), "the error offers the presented fingerprint to check and pin")
}

func writePEM(t *testing.T, certs ...*x509.Certificate) string {
	t.Helper()
	var b bytes.Buffer
	for _, c := range certs {
		require.NoError(t, pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p
}

// selfSigned makes a self-signed certificate for 127.0.0.1, valid in
// [notBefore, notAfter].
func selfSigned(t *testing.T, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func TestDialCAFile(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	ctx := context.Background()

	c := simContext(srv)
	c.Fingerprint = ""
	c.CAFile = writePEM(t, srv.Certificate())
	require.NoError(t, dialT(t, "lab", c, nil).verify(ctx))

	// A CA that did not sign the server's certificate.
	other := selfSigned(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	c.CAFile = writePEM(t, other.Leaf)
	err := dialT(t, "lab", c, nil).verify(ctx)
	var te *TLSError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	assert.Contains(t, err.Error(), "caFile must hold the CA")

	// Files that are not there or hold no certificate.
	c.CAFile = filepath.Join(t.TempDir(), "missing.pem")
	_, err = dial("lab", c, nil)
	require.Error(t, err)
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Contains(t, err.Error(), `caFile "`+c.CAFile+`": no such file`)

	c.CAFile = filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(c.CAFile, []byte("not a certificate\n"), 0o644))
	_, err = dial("lab", c, nil)
	require.Error(t, err)
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Contains(t, err.Error(), "holds no PEM certificate")
}

func TestDialInsecureSkipVerifyWarnsOnce(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	ctx := context.Background()
	log, logs := newTestLogger()
	c := simContext(srv)
	c.Fingerprint = ""
	c.InsecureSkipVerify = true
	cn := dialT(t, "lab", c, log)
	for range 3 {
		require.NoError(t, cn.verify(ctx))
	}
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, `TLS verification disabled for context \"lab\"`), out)
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "context=lab")
	_, sec := srv.Token()
	assertNoSecret(t, sec, nil, out)
}

func TestDialTokenSecretFile(t *testing.T) {
	srv := fastSim(t)
	ctx := context.Background()
	_, sec := srv.Token()
	home := t.TempDir()
	t.Setenv("HOME", home)

	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(home, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	fileCtx := func(path string) Context {
		c := simContext(srv)
		c.TokenSecret = secret.Secret{}
		c.TokenSecretFile = path
		return c
	}

	t.Run("0600 file with a trailing newline", func(t *testing.T) {
		log, logs := newTestLogger()
		cn := dialT(t, "lab", fileCtx(write("pve-token", sec+"\n", 0o600)), log)
		require.NoError(t, cn.verify(ctx))
		assert.NotContains(t, logs.String(), "level=WARN")
		assertNoSecret(t, sec, nil, logs.String())
	})
	t.Run("~ is the home directory", func(t *testing.T) {
		write("tilde-token", sec, 0o600)
		require.NoError(t, dialT(t, "lab", fileCtx("~/tilde-token"), nil).verify(ctx))
	})
	t.Run("readable by others warns", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("no Unix permissions")
		}
		log, logs := newTestLogger()
		cn := dialT(t, "lab", fileCtx(write("open-token", sec, 0o644)), log)
		require.NoError(t, cn.verify(ctx))
		assert.Contains(t, logs.String(), "readable by other users")
		assertNoSecret(t, sec, nil, logs.String())
	})
	for _, tc := range []struct {
		name, file, content, sub string
	}{
		{"missing", "absent", "", "no such file"},
		{"empty", "empty", "\n", "is empty"},
		{"id and secret", "whole", "root@pam!openctl=" + sec + "\n", "holds more than the secret"},
		{"two lines", "lines", sec + "\nsecond line\n", "white space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(home, tc.file)
			if tc.name != "missing" {
				p = write(tc.file, tc.content, 0o600)
			}
			_, err := dial("lab", fileCtx(p), nil)
			require.Error(t, err)
			assert.Equal(t, errcode.Invalid, errcode.Of(err))
			assert.Contains(t, err.Error(), `context "lab": tokenSecretFile "`+p+`"`)
			assert.Contains(t, err.Error(), tc.sub)
			assertNoSecret(t, sec, err)
		})
	}
}

func TestVerifyWrongToken(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	const wrong = "00000000-dead-beef-0000-000000000000"
	log, logs := newTestLogger()
	c := simContext(srv)
	c.TokenSecret = secret.New(wrong)
	cn := dialT(t, "lab", c, log)

	err := cn.verify(context.Background())
	require.Error(t, err)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	assert.False(t, errcode.Retryable(err))
	assert.Contains(t, err.Error(), `rejected API token "root@pam!openctl"`)
	assert.Contains(t, err.Error(), "401")
	assertNoSecret(t, wrong, err, logs.String())
	_, right := srv.Token()
	assertNoSecret(t, right, err, logs.String())

	// The same through classify, on an ordinary call.
	_, err = cn.listNodes(context.Background())
	require.Error(t, err)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	assertNoSecret(t, wrong, err, logs.String())
}

func TestVerifyUnknownToken(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	c := simContext(srv)
	c.TokenID = "ci@pve!nobody"
	err := dialT(t, "lab", c, nil).verify(context.Background())
	require.Error(t, err)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
}

func TestVerifyRestrictedTokenConnects(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	sec, err := srv.AddToken("ci@pve!audit", "VM.Audit")
	require.NoError(t, err)
	c := simContext(srv)
	c.TokenID, c.TokenSecret = "ci@pve!audit", secret.New(sec)
	require.NoError(t, dialT(t, "ci", c, nil).verify(context.Background()))
}

// quietTLSServer is an httptest TLS server (with cert, if not nil) that
// does not log the handshakes the client refuses.
func quietTLSServer(t *testing.T, h http.Handler, cert *tls.Certificate) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	if cert != nil {
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

func TestVerifyNotProxmox(t *testing.T) {
	t.Parallel()
	ts := quietTLSServer(t, http.NotFoundHandler(), nil)
	c := validContext()
	c.Endpoint = ts.URL
	c.Fingerprint = formatFingerprint(sha256.Sum256(ts.Certificate().Raw))
	err := dialT(t, "lab", c, nil).verify(context.Background())
	require.Error(t, err)
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Contains(t, err.Error(), "does not look like a Proxmox VE API")
	assertNoSecret(t, testSecret, err)
}

func TestVerifyPlainHTTPServer(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	c := validContext()
	c.Endpoint = strings.Replace(ts.URL, "http://", "https://", 1)
	err := dialT(t, "lab", c, nil).verify(context.Background())
	require.Error(t, err)
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Contains(t, err.Error(), "plain HTTP")
}

func TestVerifyUnreachableIsTransient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := validContext()
	c.Endpoint = "https://" + addr
	err = dialT(t, "lab", c, nil).verify(context.Background())
	require.Error(t, err)
	assert.Equal(t, errcode.Transient, errcode.Of(err), "%v", err)
	assert.Contains(t, err.Error(), `context "lab"`)
	assertNoSecret(t, testSecret, err)
}

func TestPinnedCertificateMustBeValid(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	ts := quietTLSServer(t, http.NotFoundHandler(), &cert)

	c := validContext()
	c.Endpoint = ts.URL
	c.Fingerprint = formatFingerprint(sha256.Sum256(cert.Leaf.Raw))
	err := dialT(t, "lab", c, nil).verify(context.Background())
	require.Error(t, err)
	var te *TLSError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, err.Error(), "expired")
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
}

func TestDialRefusesInvalidContext(t *testing.T) {
	t.Parallel()
	c := validContext()
	c.TokenID = "root@pam"
	_, err := dial("lab", c, nil)
	require.Error(t, err)
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Contains(t, err.Error(), `proxmox: context "lab": tokenId:`)
	assertNoSecret(t, testSecret, err)
}

func TestDialTransport(t *testing.T) {
	t.Parallel()
	cn := dialT(t, "lab", validContext(), nil)
	assert.Equal(t, "https://pve.example.com:8006/api2/json", cn.base)
	ct, ok := cn.hc.Transport.(*tlsCheckTransport)
	require.True(t, ok)
	tr := ct.base
	assert.GreaterOrEqual(t, tr.MaxIdleConnsPerHost, 32)
	assert.Equal(t, uint16(tls.VersionTLS12), tr.TLSClientConfig.MinVersion)
	assert.Equal(t, 10*time.Second, tr.TLSHandshakeTimeout)
	assert.Equal(t, 60*time.Second, tr.ResponseHeaderTimeout)
	assert.NotNil(t, tr.TLSClientConfig.VerifyConnection, "the pin is checked on every handshake")
	assert.True(t, strings.HasPrefix(userAgent(), "openctl/"))
}

func TestTLSErrorMatching(t *testing.T) {
	t.Parallel()
	inner := &fingerprintMismatchError{presented: true}
	err := fmt.Errorf("get /version: %w", &TLSError{Context: "lab", Host: "pve:8006", Err: inner})
	assert.True(t, errors.Is(err, errcode.Unauthorized))
	assert.False(t, errors.Is(err, errcode.Transient))
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	var fm *fingerprintMismatchError
	assert.ErrorAs(t, err, &fm)
	assert.Same(t, err, classify(err), "classify passes a TLSError through")
}
