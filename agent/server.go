package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// Defaults of ServerConfig.
const (
	// DefaultReleaseURL is where k3s releases are downloaded from: the
	// k3s GitHub releases.
	DefaultReleaseURL = "https://github.com/k3s-io/k3s/releases/download"
	// DefaultHealthTimeout bounds the health gate after an upgrade.
	DefaultHealthTimeout = 2 * time.Minute
	// DefaultDownloadTimeout bounds the download of a k3s release (the
	// checksum file and the binary together).
	DefaultDownloadTimeout = 10 * time.Minute
)

// Limits and timeouts of the server.
const (
	// MaxRequestBody is the largest request body the server reads.
	MaxRequestBody = 4 << 10

	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	logsWriteTimeout  = 2 * time.Minute
	serviceTimeout    = 2 * time.Minute
	maxHeaderBytes    = 16 << 10
	logsFlushEvery    = 50 * time.Millisecond
)

// HTTP header names of the agent protocol.
const (
	// HeaderAgentVersion carries the agent's Version on every response.
	HeaderAgentVersion = "Openctl-Agent-Version"
	// TrailerLogsError is a trailer of GET /v1/logs/k3s, set when the log
	// stream failed after it had started ("CODE: message").
	TrailerLogsError = "Openctl-Error"
)

// ServerConfig configures a [Server]. The zero value of every field but
// System is usable; CABundle, CertPEM and KeyPEM are needed to serve TLS.
type ServerConfig struct {
	// CABundle is the PEM bundle of the CAs whose client certificates are
	// accepted (ca.pem). No other CA, and no system root, is trusted.
	CABundle []byte
	// CertPEM and KeyPEM are the node's server certificate and key
	// (server.pem, server.key).
	CertPEM []byte
	KeyPEM  []byte
	// System acts on the host. Required.
	System System
	// ReleaseURL is the base URL of k3s releases; the binary is fetched
	// from <ReleaseURL>/<version>/<asset>. Default DefaultReleaseURL.
	ReleaseURL string
	// HTTPClient downloads releases. Default: a client with the
	// environment's proxy settings that refuses a redirect from https to
	// http.
	HTTPClient *http.Client
	// Logger receives one audit line per request and the server's own
	// errors. Default: discard.
	Logger *slog.Logger
	// HealthTimeout bounds the wait, after an upgrade's restart, for the
	// service to be active and report the new version. Default
	// DefaultHealthTimeout.
	HealthTimeout time.Duration
	// DownloadTimeout bounds the download of a release. Default
	// DefaultDownloadTimeout.
	DownloadTimeout time.Duration
	// Now is the clock used to check certificate validity. Default
	// time.Now.
	Now func() time.Time
}

// String describes the configuration without the private key.
func (c ServerConfig) String() string {
	return fmt.Sprintf("agent.ServerConfig{ReleaseURL:%q HealthTimeout:%v DownloadTimeout:%v KeyPEM:[redacted]}", c.ReleaseURL, c.HealthTimeout, c.DownloadTimeout)
}

// GoString describes the configuration without the private key (%#v).
func (c ServerConfig) GoString() string { return c.String() }

// LogValue describes the configuration in log/slog output without the
// private key.
func (c ServerConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Server is the node agent's HTTPS server. It is safe for concurrent use.
type Server struct {
	sys             System
	log             *slog.Logger
	now             func() time.Time
	releaseURL      string
	httpClient      *http.Client
	healthTimeout   time.Duration
	downloadTimeout time.Duration
	handler         http.Handler
	srv             *http.Server

	creds atomic.Pointer[credentials] // the latest Reload's; nil without credentials

	// busy is held by a mutating operation (a service action or an
	// upgrade) for its whole duration; a second one gets 409 CONFLICT.
	busy sync.Mutex
}

// credentials are what Reload installs: the per-connection TLS
// configuration and the bundle of accepted CAs it was built from.
type credentials struct {
	tls    *tls.Config
	bundle pki.Bundle
}

// NewServer returns a server for cfg. It checks the credentials (the
// bundle must hold CA certificates, the key must match the certificate)
// and the release URL. Without credentials the server can still be used
// in process through Handler, but not served.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.System == nil {
		return nil, fmt.Errorf("agent: server: no System: %w", errcode.Invalid)
	}
	s := &Server{
		sys:             cfg.System,
		log:             cfg.Logger,
		now:             cfg.Now,
		httpClient:      cfg.HTTPClient,
		healthTimeout:   cfg.HealthTimeout,
		downloadTimeout: cfg.DownloadTimeout,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.httpClient == nil {
		s.httpClient = defaultHTTPClient()
	}
	if s.healthTimeout <= 0 {
		s.healthTimeout = DefaultHealthTimeout
	}
	if s.downloadTimeout <= 0 {
		s.downloadTimeout = DefaultDownloadTimeout
	}
	rel, err := parseReleaseURL(cfg.ReleaseURL)
	if err != nil {
		return nil, err
	}
	s.releaseURL = rel
	if len(cfg.CABundle) > 0 || len(cfg.CertPEM) > 0 || len(cfg.KeyPEM) > 0 {
		if err := s.Reload(cfg.CABundle, cfg.CertPEM, cfg.KeyPEM); err != nil {
			return nil, err
		}
	}
	s.handler = s.audit(s.routes())
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

func parseReleaseURL(raw string) (string, error) {
	if raw == "" {
		return DefaultReleaseURL, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errcode.Wrap(errcode.Invalid, "agent: release URL", err)
	}
	// A "?" or "#" with nothing after it parses as no query or fragment,
	// yet the version and asset appended to the URL would land in them.
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || strings.ContainsAny(raw, "?#") {
		return "", fmt.Errorf("agent: release URL %q: want http(s)://host/path without user, query or fragment: %w", raw, errcode.Invalid)
	}
	return strings.TrimRight(raw, "/"), nil
}

// Reload replaces the accepted CA bundle and the server certificate, for
// example after a CA rotation step. New connections use the new
// credentials. A connection established before keeps its server
// certificate, but each of its requests is checked against the new
// bundle: a client whose CA was dropped gets 403 UNAUTHORIZED and the
// connection is closed. TLS session resumption is disabled, so a dropped
// CA cannot come back through a session ticket either.
func (s *Server) Reload(caBundle, certPEM, keyPEM []byte) error {
	bundle, err := pki.ParseBundle(caBundle)
	if err != nil {
		return fmt.Errorf("agent: server CA bundle: %w", err)
	}
	leaf, err := pki.ParseLeaf(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("agent: server certificate: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{leaf.TLSCertificate()},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        bundle.Pool(),
		NextProtos:       []string{"http/1.1"},
		Time:             s.now,
		VerifyConnection: requireClientAuth,
		// Every connection verifies the client's chain afresh.
		SessionTicketsDisabled: true,
	}
	s.creds.Store(&credentials{tls: cfg, bundle: bundle})
	return nil
}

// recheckClient checks, for every request on a mutual-TLS connection, that
// the client certificate verified at the handshake is still acceptable:
// issued by a CA of the current bundle (it may have been dropped by a
// Reload since) and still within its validity period (a connection can
// outlive its certificate).
func (s *Server) recheckClient(cs *tls.ConnectionState) error {
	c := s.creds.Load()
	if c == nil || len(cs.PeerCertificates) == 0 {
		return errors.New("agent: no verified client certificate")
	}
	if now := s.now(); now.After(cs.PeerCertificates[0].NotAfter) {
		return errors.New("agent: the client certificate has expired")
	}
	for _, chain := range cs.VerifiedChains {
		if len(chain) > 0 && c.bundle.Contains(chain[len(chain)-1]) {
			return nil
		}
	}
	return errors.New("agent: the client certificate's CA is no longer accepted")
}

// requireClientAuth insists on the ClientAuth extended key usage in the
// client's certificate. crypto/tls already verifies the chain for
// ClientAuth, but it also accepts a certificate without any extended key
// usage; ours always have one.
func requireClientAuth(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("agent: no client certificate")
	}
	if !slices.Contains(cs.PeerCertificates[0].ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return errors.New("agent: client certificate lacks the ClientAuth extended key usage")
	}
	return nil
}

// TLSConfig returns the server's TLS configuration: TLS 1.3 only, client
// certificates required and verified against the CA bundle only, the
// credentials of the latest Reload.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := s.creds.Load()
			if c == nil {
				return nil, errors.New("agent: server has no credentials")
			}
			return c.tls, nil
		},
	}
}

// Handler returns the agent's HTTP handler without TLS, for in-process
// use. It trusts whatever reaches it: never serve it without TLS.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln, wraps them in TLS and serves the agent
// until Shutdown. Like http.Server.Serve, it returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.creds.Load() == nil {
		_ = ln.Close()
		return fmt.Errorf("agent: server has no CA bundle, certificate or key: %w", errcode.Invalid)
	}
	return s.srv.Serve(tls.NewListener(ln, s.TLSConfig()))
}

// ListenAndServe listens on the TCP address addr (for example ":9443") and
// calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return s.Serve(ln)
}

// Shutdown stops accepting connections and waits, until ctx is done, for
// requests in flight to finish (see http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/info", s.handleInfo)
	mux.HandleFunc("/v1/logs/k3s", s.handleLogs)
	mux.HandleFunc("/v1/service/k3s/{action}", s.handleService)
	mux.HandleFunc("/v1/upgrade/k3s", s.handleUpgrade)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, errcode.NotFound, "no such endpoint: "+r.URL.Path)
	})
	return mux
}

// allow answers 405 unless r uses method m.
func allow(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m {
		return true
	}
	w.Header().Set("Allow", m)
	writeError(w, r, http.StatusMethodNotAllowed, errcode.Invalid, "method "+r.Method+" not allowed, use "+m)
	return false
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	ctx := r.Context()
	facts, err := s.sys.Facts(ctx)
	if err != nil {
		writeErr(w, r, fmt.Errorf("agent: host facts: %w", err))
		return
	}
	info := Info{
		Facts:        facts,
		AgentVersion: Version,
		Capabilities: capabilities(),
		ServiceState: StateUnknown,
	}
	role, err := s.sys.Role(ctx)
	if err != nil {
		info.Problems = append(info.Problems, "role: "+err.Error())
	}
	info.Role = role
	if err == nil && role != RoleNone {
		if st, err := s.sys.ServiceState(ctx); err != nil {
			info.Problems = append(info.Problems, "service state: "+err.Error())
		} else {
			info.ServiceState = st
		}
		if v, err := s.sys.K3sVersion(ctx, s.sys.K3sBinary()); err != nil {
			info.Problems = append(info.Problems, "k3s version: "+err.Error())
		} else {
			info.K3sVersion = v
		}
	}
	writeJSON(w, http.StatusOK, info)
}

// parseLines parses the query of GET /v1/logs/k3s: at most one parameter,
// lines, a decimal number in MinLogLines..MaxLogLines (default
// DefaultLogLines).
func parseLines(rawQuery string) (int, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, errcode.Wrap(errcode.Invalid, "agent: malformed query", err)
	}
	for k := range q {
		if k != "lines" {
			return 0, fmt.Errorf("agent: unknown query parameter %q: %w", k, errcode.Invalid)
		}
	}
	vals := q["lines"]
	switch len(vals) {
	case 0:
		return DefaultLogLines, nil
	case 1:
	default:
		return 0, fmt.Errorf("agent: lines given %d times: %w", len(vals), errcode.Invalid)
	}
	v := vals[0]
	n := 0
	if v == "" || len(v) > 4 {
		n = -1
	}
	for _, c := range v {
		if n < 0 || c < '0' || c > '9' {
			n = -1
			break
		}
		n = n*10 + int(c-'0')
	}
	if n < MinLogLines || n > MaxLogLines {
		return 0, fmt.Errorf("agent: lines=%q: want a number in %d..%d: %w", v, MinLogLines, MaxLogLines, errcode.Invalid)
	}
	return n, nil
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	n, err := parseLines(r.URL.RawQuery)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	auditAttrs(r, slog.Int("lines", n))
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(logsWriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Trailer", TrailerLogsError)
	fw := &flushWriter{w: w, rc: rc}
	err = s.sys.Logs(r.Context(), n, fw)
	if err == nil {
		err = fw.flush()
		if err != nil {
			setOutcome(r, string(errcode.Transient))
		}
		return
	}
	err = fmt.Errorf("agent: k3s logs: %w", err)
	if !fw.started {
		h.Del("Trailer")
		writeErr(w, r, err)
		return
	}
	code := errcode.Of(err)
	setOutcome(r, string(code))
	h.Set(TrailerLogsError, string(code)+": "+oneLine(err.Error()))
}

// flushWriter sends what is written to an HTTP response without waiting
// for the buffers to fill, flushing at most every logsFlushEvery.
type flushWriter struct {
	w         io.Writer
	rc        *http.ResponseController
	started   bool
	lastFlush time.Time
}

// Write writes p and flushes if the last flush is old enough.
func (f *flushWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	f.started = true
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	if time.Since(f.lastFlush) >= logsFlushEvery {
		if err := f.flush(); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (f *flushWriter) flush() error {
	f.lastFlush = time.Now()
	if !f.started {
		return nil
	}
	return f.rc.Flush()
}

// ServiceResult is the body of a successful POST /v1/service/k3s/{action}.
type ServiceResult struct {
	// Action is the action that ran.
	Action ServiceAction `json:"action"`
	// ServiceState is the k3s service state after it ("unknown" if it
	// could not be read).
	ServiceState string `json:"serviceState"`
}

func (s *Server) handleService(w http.ResponseWriter, r *http.Request) {
	action := ServiceAction(r.PathValue("action"))
	if !action.Valid() {
		writeError(w, r, http.StatusNotFound, errcode.NotFound, fmt.Sprintf("unknown service action %q (want start, stop or restart)", r.PathValue("action")))
		return
	}
	if !allow(w, r, http.MethodPost) {
		return
	}
	if !s.busy.TryLock() {
		writeError(w, r, http.StatusConflict, errcode.Conflict, "another service action or upgrade is in progress")
		return
	}
	defer s.busy.Unlock()
	// A service action is not abandoned halfway because the client went
	// away; it runs to completion or to serviceTimeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), serviceTimeout)
	defer cancel()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(serviceTimeout + writeTimeout))
	role, err := s.sys.Role(ctx)
	if err != nil {
		writeErr(w, r, fmt.Errorf("agent: k3s role: %w", err))
		return
	}
	if role == RoleNone {
		writeError(w, r, http.StatusNotFound, errcode.NotFound, "k3s is not installed")
		return
	}
	if err := s.sys.Service(ctx, action); err != nil {
		writeErr(w, r, fmt.Errorf("agent: %s %s: %w", action, role.ServiceName(), err))
		return
	}
	st, err := s.sys.ServiceState(ctx)
	if err != nil {
		st = StateUnknown
	}
	writeJSON(w, http.StatusOK, ServiceResult{Action: action, ServiceState: st})
}

// statusError gives an error an HTTP status other than its code's.
type statusError struct {
	status int
	err    error
}

// Error returns the wrapped error's message.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *statusError) Unwrap() error { return e.err }

// httpStatus maps an error code to an HTTP status.
func httpStatus(c errcode.Code) int {
	switch c {
	case errcode.NotFound:
		return http.StatusNotFound
	case errcode.AlreadyExists, errcode.Conflict:
		return http.StatusConflict
	case errcode.Invalid:
		return http.StatusBadRequest
	case errcode.Unauthorized:
		return http.StatusForbidden
	case errcode.Transient:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeErr answers with err's code, message and status.
func writeErr(w http.ResponseWriter, r *http.Request, err error) {
	code := errcode.Of(err)
	status := httpStatus(code)
	var se *statusError
	if errors.As(err, &se) {
		status = se.status
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		status, code = http.StatusRequestEntityTooLarge, errcode.Invalid
	}
	writeError(w, r, status, code, err.Error())
}

func writeError(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, msg string) {
	setOutcome(r, string(code))
	writeJSON(w, status, errorBody{Code: string(code), Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// auditRecord collects what the audit line says about a request beyond
// its status: the outcome a handler reports.
type auditRecord struct {
	mu      sync.Mutex // guards outcome and attrs
	outcome string
	attrs   []slog.Attr
}

type auditKey struct{}

// setOutcome records the request's outcome for its audit line: an error
// code, or an upgrade's status.
func setOutcome(r *http.Request, outcome string) {
	if rec, ok := r.Context().Value(auditKey{}).(*auditRecord); ok {
		rec.mu.Lock()
		rec.outcome = outcome
		rec.mu.Unlock()
	}
}

// auditAttrs adds request details (a line count, a version) to the
// request's audit line.
func auditAttrs(r *http.Request, attrs ...slog.Attr) {
	if rec, ok := r.Context().Value(auditKey{}).(*auditRecord); ok {
		rec.mu.Lock()
		rec.attrs = append(rec.attrs, attrs...)
		rec.mu.Unlock()
	}
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// WriteHeader records the first status written.
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write counts the bytes written (an implicit 200 if no status yet).
func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// audit wraps next: it caps the request body, stamps the agent version on
// the response, refuses (403) a client the current credentials no longer
// accept (recheckClient), turns a panic into a 500 and logs one audit
// line per request: who (client certificate CN), what (method and path),
// the outcome and how long it took.
func (s *Server) audit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &auditRecord{}
		sw := &statusRecorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), auditKey{}, rec))
		r.Body = http.MaxBytesReader(sw, r.Body, MaxRequestBody)
		sw.Header().Set(HeaderAgentVersion, Version)
		defer func() {
			p := recover()
			if p != nil {
				if p == http.ErrAbortHandler {
					// net/http's own signal to drop the connection, not a
					// bug: hand it back to the server, which expects it.
					panic(p)
				}
				s.log.Error("agent: handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if sw.status == 0 {
					writeError(sw, r, http.StatusInternalServerError, errcode.Internal, "internal error")
				}
				setOutcome(r, string(errcode.Internal))
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			rec.mu.Lock()
			outcome, extra := rec.outcome, rec.attrs
			rec.mu.Unlock()
			if outcome == "" {
				outcome = "ok"
				if status >= 400 {
					outcome = http.StatusText(status)
				}
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case status >= 400:
				level = slog.LevelWarn
			}
			attrs := append([]slog.Attr{
				slog.String("client", clientName(r)),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.String("outcome", outcome),
				slog.Duration("duration", time.Since(start)),
				slog.Int64("bytes", sw.bytes),
				slog.String("remote", r.RemoteAddr),
			}, extra...)
			s.log.LogAttrs(r.Context(), level, "agent: request", attrs...)
		}()
		if r.TLS != nil {
			if err := s.recheckClient(r.TLS); err != nil {
				sw.Header().Set("Connection", "close")
				writeError(sw, r, http.StatusForbidden, errcode.Unauthorized, err.Error())
				return
			}
		}
		next.ServeHTTP(sw, r)
	})
}

// clientName is the common name of the verified client certificate, or
// "-" for a request that did not come over mutual TLS (Handler used in
// process).
func clientName(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return r.TLS.PeerCertificates[0].Subject.CommonName
	}
	return "-"
}
