package proxmoxtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultTokenID is the API token every Server creates with all privileges.
const DefaultTokenID = "root@pam!openctl"

// ErrClosed is returned by Start on a Server that was closed.
var ErrClosed = errors.New("proxmoxtest: server closed")

// Server is a simulated Proxmox VE cluster served over HTTPS under /api2/json.
// It is safe for concurrent use.
type Server struct {
	cfg     config
	log     *slog.Logger
	cert    tls.Certificate
	leaf    *x509.Certificate
	mux     *http.ServeMux
	routes  []string // "METHOD /path/{param}", set by New and then read-only
	faults  *faultPlan
	secret  string // secret of DefaultTokenID, read-only
	started time.Time

	// mu guards everything below.
	mu       sync.Mutex
	closed   bool
	srv      *http.Server
	ln       net.Listener
	addr     string
	tokens   map[string]*token
	counts   map[string]int
	vms      map[int]*vm
	tasks    map[string]*task
	taskList []*task
	timers   map[*time.Timer]struct{}
	pid      uint32
	pstart   uint32
	dhcpNext int
	hostGen  map[int]int
}

// New builds a Server from opts. It does not listen yet: call Start, or use
// NewTestServer in tests.
func New(opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.nodes < 1 {
		return nil, fmt.Errorf("proxmoxtest: at least one node is required, got %d", cfg.nodes)
	}
	if cfg.speed <= 0 {
		return nil, fmt.Errorf("proxmoxtest: speed must be positive, got %v", cfg.speed)
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		log:     log,
		mux:     http.NewServeMux(),
		faults:  newFaultPlan(cfg.seed, cfg.faults),
		secret:  newSecret(),
		started: time.Now(),
		tokens:  map[string]*token{},
		counts:  map[string]int{},
		vms:     map[int]*vm{},
		tasks:   map[string]*task{},
		timers:  map[*time.Timer]struct{}{},
		pid:     uint32(0x10000 + (cfg.seed&0xffff)*7),
		pstart:  uint32(0x200000 + (cfg.seed&0xffff)*3),
		hostGen: map[int]int{},
	}
	s.tokens[DefaultTokenID] = &token{id: DefaultTokenID, secret: s.secret}
	s.registerRoutes()
	for _, t := range cfg.templates {
		if err := s.seedTemplate(t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewTestServer starts a Server on a free loopback port and closes it when
// the test ends. It fails the test if the server cannot start.
func NewTestServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := New(opts...)
	if err != nil {
		tb.Fatalf("proxmoxtest: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		tb.Fatalf("proxmoxtest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start listens on addr (host:port; port 0 picks a free one) and serves in
// the background until Close.
func (s *Server) Start(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxmoxtest: listen address: %w", err)
	}
	cert, leaf, err := newCertificate(host)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.srv != nil {
		return errors.New("proxmoxtest: server already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("proxmoxtest: %w", err)
	}
	s.cert, s.leaf = cert, leaf
	// HTTP/1.1 only: error responses hijack the connection to write their own
	// status line, which HTTP/2 cannot do.
	tlsLn := tls.NewListener(ln, &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	s.ln = ln
	s.addr = ln.Addr().String()
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	srv := s.srv
	go func() {
		if err := srv.Serve(tlsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("proxmoxtest: serve", "err", err)
		}
	}()
	return nil
}

// Close stops the listener, closes open connections and cancels pending
// tasks. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for t := range s.timers {
		t.Stop()
	}
	s.timers = map[*time.Timer]struct{}{}
	srv := s.srv
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// URL is the API base URL, e.g. https://127.0.0.1:8006/api2/json. It is
// empty before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == "" {
		return ""
	}
	return "https://" + s.addr + "/api2/json"
}

// Addr is the address the server listens on, empty before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Token returns the id and secret of the API token that holds every
// privilege, for use as proxmox.WithAPIToken(id, secret).
func (s *Server) Token() (id, secret string) { return DefaultTokenID, s.secret }

// Fingerprint is the SHA-256 fingerprint of the server certificate as
// Proxmox shows it: colon-separated upper-case hex. Empty before Start.
func (s *Server) Fingerprint() string {
	s.mu.Lock()
	leaf := s.leaf
	s.mu.Unlock()
	if leaf == nil {
		return ""
	}
	return fingerprint(leaf.Raw)
}

// Certificate is the server certificate, nil before Start.
func (s *Server) Certificate() *x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaf
}

// Client returns an *http.Client that trusts the server certificate. It
// must be called after Start.
func (s *Server) Client() *http.Client {
	pool := x509.NewCertPool()
	if c := s.Certificate(); c != nil {
		pool.AddCert(c)
	}
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   false,
			MaxIdleConnsPerHost: 32,
		},
		Timeout: 60 * time.Second,
	}
}

// Routes lists the served routes as "METHOD /path" with Proxmox's
// {parameter} placeholders, sorted, e.g. "GET /nodes/{node}/qemu".
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

// RequestCount is how many requests reached route ("METHOD /path", as
// listed by Routes), counting those refused by auth checks and faults.
func (s *Server) RequestCount(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[route]
}

// RequestCounts returns a copy of every route's request count. Requests to
// unserved routes are counted under "METHOD <unserved>".
func (s *Server) RequestCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// ServeHTTP serves the API; it lets a Server be mounted on any http.Server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// scaled converts a configured latency to wall time using the speed factor.
func (s *Server) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.cfg.speed)
}

// afterFunc runs f after d unless the server is closed first. Callers hold
// s.mu.
func (s *Server) afterFunc(d time.Duration, f func()) {
	if s.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		delete(s.timers, t)
		f()
	})
	s.timers[t] = struct{}{}
}

// wait blocks for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

func newSecret() string {
	var b [16]byte
	_, _ = io.ReadFull(rand.Reader, b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
