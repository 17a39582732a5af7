package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// Timeouts and limits of the http.Server. Handlers that outlast
// writeTimeout (logs, service actions, upgrades) extend their own write
// deadline.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 16 << 10
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
	// Version is the agent's version, reported in /v1/info and in the
	// Openctl-Agent-Version header of every response, which clients
	// compare with the version they expect. cmd/openctl-agent sets its
	// build version. Empty: no version is reported.
	Version string
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
	return fmt.Sprintf("node.ServerConfig{Version:%q ReleaseURL:%q HealthTimeout:%v DownloadTimeout:%v KeyPEM:[redacted]}", c.Version, c.ReleaseURL, c.HealthTimeout, c.DownloadTimeout)
}

// GoString describes the configuration without the private key (%#v).
func (c ServerConfig) GoString() string { return c.String() }

// LogValue describes the configuration in log/slog output without the
// private key.
func (c ServerConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Server is the node agent's HTTPS server. It is safe for concurrent use.
type Server struct {
	sys             System
	version         string
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
		version:         cfg.Version,
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
