package proxmox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// conn is the connection to one context: a go-proxmox client whose
// transport verifies the server as the context says. It is safe for
// concurrent use; its fields are set by dial and read-only afterwards.
type conn struct {
	name   string
	cfg    Context
	client *pve.Client
	log    *slog.Logger

	base string       // API base URL, ".../api2/json"
	hc   *http.Client // the client's HTTP client, for close
}

// Transport limits. The engine runs many calls in parallel against one
// endpoint, so idle connections are kept for reuse.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 60 * time.Second
	requestTimeout        = 5 * time.Minute // backstop; callers' contexts are usually shorter
	maxIdleConnsPerHost   = 64
)

// dial builds the go-proxmox client for one context; it does not contact
// the server (see verify). It reads tokenSecretFile and caFile, so a
// missing or unreadable file fails here with an Invalid error naming it.
func dial(name string, c Context, log *slog.Logger) (*conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("context", name)
	if ps := c.problems(); len(ps) > 0 {
		for i, p := range ps {
			ps[i] = fmt.Sprintf("proxmox: context %q: %s", name, p)
		}
		return nil, errcode.New(errcode.Invalid, strings.Join(ps, "\n"))
	}
	base, err := apiBaseURL(c.Endpoint, c.InsecureSkipVerify)
	if err != nil { // checked by problems; kept for safety
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: endpoint: %v", name, err))
	}

	tok := c.TokenSecret
	if c.TokenSecretFile != "" {
		if tok, err = readTokenSecretFile(name, c.TokenSecretFile, log); err != nil {
			return nil, err
		}
	}

	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	trust := trustSystem
	switch {
	case c.Fingerprint != "":
		pin, err := ParseFingerprint(c.Fingerprint)
		if err != nil {
			return nil, fmt.Errorf("proxmox: context %q: %w", name, err)
		}
		// InsecureSkipVerify only turns off Go's chain building and
		// host name check; VerifyConnection then demands the exact
		// pinned certificate (a stronger identity check than a host
		// name) and checks its validity period. The handshake still
		// proves the server holds the certificate's private key.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = pinVerifier(pin)
		trust = trustFingerprint
	case c.CAFile != "":
		pool, err := readCAFile(name, c.CAFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
		trust = trustCAFile
	case c.InsecureSkipVerify:
		tc.InsecureSkipVerify = true
		trust = trustNone
		log.Warn(fmt.Sprintf("proxmox: TLS verification disabled for context %q: anyone on the network path can impersonate %s and read the API token; pin the certificate with fingerprint instead", name, base),
			"endpoint", base)
	}
	if strings.HasPrefix(base, "http://") {
		log.Warn(fmt.Sprintf("proxmox: context %q uses plain http: the API token is sent in clear text", name), "endpoint", base)
	}

	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          2 * maxIdleConnsPerHost,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
		// HTTP/1.1 only: pveproxy speaks HTTP/1.1.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	hc := &http.Client{
		Transport: &tlsCheckTransport{base: tr, context: name, trust: trust},
		Timeout:   requestTimeout,
	}
	client := pve.NewClient(base,
		pve.WithHTTPClient(hc),
		pve.WithAPIToken(c.TokenID, tok.Reveal()),
		pve.WithUserAgent(userAgent()),
		pve.WithLogger(pveLogger{log}),
	)
	return &conn{name: name, cfg: c, client: client, log: log, base: base, hc: hc}, nil
}

// verify contacts the server (GET /version) so that bad TLS or credentials
// fail early with a clear error: a *TLSError (Unauthorized) when the
// certificate is not trusted, Unauthorized when the token is rejected,
// Invalid when the endpoint is not a Proxmox VE API, and what classify
// makes of anything else (Transient for network failures).
func (c *conn) verify(ctx context.Context) error {
	v, err := c.client.Version(ctx)
	if err == nil {
		if v != nil {
			c.log.DebugContext(ctx, "proxmox: connected", "endpoint", c.base, "version", v.Version, "release", v.Release)
		}
		return nil
	}
	if te, ok := errors.AsType[*TLSError](err); ok {
		return te
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return errcode.Wrap(errcode.Invalid, fmt.Sprintf("proxmox: context %q: endpoint %s: the server speaks plain HTTP, not HTTPS (is the port right? Proxmox listens on 8006)", c.name, c.base), err)
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return errcode.Wrap(errcode.Invalid, fmt.Sprintf("proxmox: context %q: endpoint %s does not speak TLS (is the port right? Proxmox listens on 8006)", c.name, c.base), err)
	}
	if apiErr, ok := pve.AsAPIError(err); ok {
		switch apiErr.StatusCode {
		case http.StatusUnauthorized:
			return errcode.Wrap(errcode.Unauthorized, fmt.Sprintf("proxmox: context %q: %s rejected API token %q: check tokenId and the secret (a token's secret is shown once, when it is created)", c.name, c.base, c.cfg.TokenID), err)
		case http.StatusNotFound, http.StatusNotImplemented:
			return errcode.Wrap(errcode.Invalid, fmt.Sprintf("proxmox: context %q: %s does not look like a Proxmox VE API (GET /version failed)", c.name, c.base), err)
		}
	}
	return fmt.Errorf("proxmox: context %q: %s: %w", c.name, c.base, classify(err))
}

// close releases the connection's idle HTTP connections.
func (c *conn) close() { c.hc.CloseIdleConnections() }

// readTokenSecretFile reads a token secret file: ~ expanded, surrounding
// white space trimmed. Errors are Invalid, name the file and never quote
// its content.
func readTokenSecretFile(ctxName, path string, log *slog.Logger) (secret.Secret, error) {
	p, err := expandHome(path)
	if err != nil {
		return secret.Secret{}, errcode.Wrap(errcode.Invalid, fmt.Sprintf("proxmox: context %q: tokenSecretFile %q", ctxName, path), err)
	}
	bad := func(msg string, err error) (secret.Secret, error) {
		m := fmt.Sprintf("proxmox: context %q: tokenSecretFile %q: %s", ctxName, p, msg)
		if err == nil {
			return secret.Secret{}, errcode.New(errcode.Invalid, m)
		}
		return secret.Secret{}, errcode.Wrap(errcode.Invalid, m, err)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("no such file", nil)
	case err != nil:
		return bad("cannot read it", err)
	case fi.IsDir():
		return bad("is a directory", nil)
	case fi.Size() > 4096:
		return bad("is too large to hold a token secret", nil)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		log.Warn(fmt.Sprintf("proxmox: token secret file %s is readable by other users (mode %v); chmod 600 it", p, fi.Mode().Perm()), "file", p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return bad("cannot read it", err)
	}
	s := strings.TrimSpace(string(b))
	switch {
	case s == "":
		return bad("is empty", nil)
	case strings.ContainsAny(s, "=!@"):
		return bad("holds more than the secret (it must hold only the token's secret, not \"user@realm!name=secret\")", nil)
	}
	if msg := secretProblem(s); msg != "" {
		return bad(msg, nil)
	}
	return secret.New(s), nil
}

// readCAFile reads a PEM bundle of CA certificates.
func readCAFile(ctxName, path string) (*x509.CertPool, error) {
	p, err := expandHome(path)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("proxmox: context %q: caFile %q", ctxName, path), err)
	}
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: caFile %q: no such file", ctxName, p))
	case err != nil:
		return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("proxmox: context %q: caFile %q: cannot read it", ctxName, p), err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: context %q: caFile %q holds no PEM certificate (want a file with -----BEGIN CERTIFICATE----- blocks, e.g. a copy of /etc/pve/pve-root-ca.pem)", ctxName, p))
	}
	return pool, nil
}

// expandHome replaces a leading "~" or "~/" with the home directory.
func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~\`) {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, p[1:]), nil
}

// pinVerifier returns a tls.Config.VerifyConnection that accepts only the
// certificate whose SHA-256 is pin, within its validity period. It runs on
// every handshake, resumed sessions included.
func pinVerifier(pin [32]byte) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &fingerprintMismatchError{Expected: pin}
		}
		leaf := cs.PeerCertificates[0]
		got := sha256.Sum256(leaf.Raw)
		if subtle.ConstantTimeCompare(got[:], pin[:]) != 1 {
			return &fingerprintMismatchError{Presented: got, Expected: pin, presented: true}
		}
		if now := time.Now(); now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
			return x509.CertificateInvalidError{Cert: leaf, Reason: x509.Expired, Detail: fmt.Sprintf(
				"the pinned certificate is valid from %s to %s, and it is now %s",
				leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
		}
		return nil
	}
}

// fingerprintMismatchError: the server's certificate is not the pinned one.
type fingerprintMismatchError struct {
	Presented, Expected [32]byte
	presented           bool // false: the server sent no certificate
}

func (e *fingerprintMismatchError) Error() string {
	if !e.presented {
		return "certificate fingerprint mismatch: the server presented no certificate, expected " + formatFingerprint(e.Expected)
	}
	return "certificate fingerprint mismatch: server presented " + formatFingerprint(e.Presented) + ", expected " + formatFingerprint(e.Expected)
}

// How a context trusts its server; it decides the advice a TLSError gives.
type trustMode int

const (
	trustSystem trustMode = iota
	trustCAFile
	trustFingerprint
	trustNone
)

// TLSError is a failed TLS verification of a Proxmox server: the
// certificate does not match the pinned fingerprint, is not signed by a
// trusted CA, does not name the host, or has expired. It matches
// errcode.Unauthorized (errors.Is, errcode.Of) and is never worth retrying:
// the provider's classify passes it through unchanged, so check for it
// with errors.As before treating an error as a network failure.
//
// Err is the underlying failure, e.g. a *tls.CertificateVerificationError;
// its text names both fingerprints on a mismatch.
type TLSError struct {
	Context string // the context's name
	Host    string // host:port the client connected to
	Err     error

	trust trustMode
}

// Error explains the failure and what to do about it.
func (e *TLSError) Error() string {
	msg := fmt.Sprintf("proxmox: context %q: TLS verification of %s failed: %v", e.Context, e.Host, e.Err)
	if hint := e.hint(); hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

func (e *TLSError) hint() string {
	if _, ok := errors.AsType[*fingerprintMismatchError](e.Err); ok {
		return "the server is not the one whose certificate was pinned, or its certificate was renewed: check the fingerprint on the node (System → Certificates, or pvenode cert info) before updating it"
	}
	if ua, ok := errors.AsType[x509.UnknownAuthorityError](e.Err); ok {
		fp := ""
		if ua.Cert != nil {
			fp = formatFingerprint(sha256.Sum256(ua.Cert.Raw))
		} else if cv, ok := errors.AsType[*tls.CertificateVerificationError](e.Err); ok && len(cv.UnverifiedCertificates) > 0 {
			fp = formatFingerprint(sha256.Sum256(cv.UnverifiedCertificates[0].Raw))
		}
		var b strings.Builder
		if e.trust == trustCAFile {
			b.WriteString("caFile must hold the CA that signed the server's certificate, on Proxmox /etc/pve/pve-root-ca.pem")
		} else {
			b.WriteString("Proxmox's certificate is self-signed by default: pin it with fingerprint, or set caFile to a copy of /etc/pve/pve-root-ca.pem")
		}
		if fp != "" {
			fmt.Fprintf(&b, "; the server presented a certificate with SHA-256 fingerprint %s, pin it only after checking it matches the one the node shows (System → Certificates, or pvenode cert info)", fp)
		}
		return b.String()
	}
	if _, ok := errors.AsType[x509.HostnameError](e.Err); ok {
		return "connect with a host name or address the certificate lists, or pin the certificate with fingerprint"
	}
	return ""
}

// Is reports whether target is errcode.Unauthorized.
func (e *TLSError) Is(target error) bool { return target == errcode.Unauthorized }

// Unwrap returns the underlying failure and errcode.Unauthorized, so that
// errors.As reaches the former and errcode.Of finds the latter.
func (e *TLSError) Unwrap() []error { return []error{e.Err, errcode.Unauthorized} }

// tlsCheckTransport turns TLS verification failures into *TLSError so that
// callers can tell them from network failures (which are retried).
type tlsCheckTransport struct {
	base    *http.Transport
	context string
	trust   trustMode
}

// RoundTrip implements http.RoundTripper.
func (t *tlsCheckTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil && isTLSVerificationError(err) {
		if _, ok := errors.AsType[*TLSError](err); !ok {
			err = &TLSError{Context: t.context, Host: r.URL.Host, Err: err, trust: t.trust}
		}
	}
	return res, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (t *tlsCheckTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

func isTLSVerificationError(err error) bool {
	if _, ok := errors.AsType[*fingerprintMismatchError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	return false
}

// pveLogger routes go-proxmox's log lines to slog. Its debug lines are
// dropped: they carry request and response bodies, which can hold
// cloud-init passwords.
type pveLogger struct{ log *slog.Logger }

func (l pveLogger) Debugf(string, ...any) {}
func (l pveLogger) Infof(format string, v ...any) {
	l.log.Info("go-proxmox: " + fmt.Sprintf(format, v...))
}
func (l pveLogger) Warnf(format string, v ...any) {
	l.log.Warn("go-proxmox: " + fmt.Sprintf(format, v...))
}
func (l pveLogger) Errorf(format string, v ...any) {
	l.log.Error("go-proxmox: " + fmt.Sprintf(format, v...))
}

// userAgent is "openctl/<module version>", or "openctl/dev".
func userAgent() string {
	const module = "github.com/openctl/openctl"
	v := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == module && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == module && d.Version != "" {
				v = d.Version
			}
		}
	}
	return "openctl/" + v
}
