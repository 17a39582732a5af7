package agenttest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
)

// NodeName is the name in the server certificate of an Env's agent (its
// other SANs are 127.0.0.1 and ::1).
const NodeName = "node-1"

// AgentVersion is the version an Env's agent reports and its client
// expects, unless Options.Version says otherwise.
const AgentVersion = "v0.0.0-agenttest"

// Options configure Start. The zero value starts an agent on a fresh
// NewSystem with short timeouts.
type Options struct {
	// System is the fake host. Default NewSystem(tb).
	System *System
	// Version is the version the agent reports and the Env's clients
	// expect. Default AgentVersion.
	Version string
	// ReleaseURL is where upgrades download from (see ReleaseServer).
	ReleaseURL string
	// HealthTimeout and DownloadTimeout of the server. Defaults 2s and 5s.
	HealthTimeout   time.Duration
	DownloadTimeout time.Duration
	// Logger is the server's logger (audit lines). Default: discard.
	Logger *slog.Logger
	// ClientLogger is the client's logger. Default: discard.
	ClientLogger *slog.Logger
	// Now is the server's clock for certificate checks. Default time.Now.
	Now func() time.Time
}

// Env is a running agent and a client for it, all over mutual TLS on
// loopback, with the certificates that made them. Its fields must not be
// changed; its methods are safe for concurrent use.
type Env struct {
	CA         *pki.CA       // the cluster CA
	Bundle     pki.Bundle    // accepted CAs: CA
	ServerLeaf *pki.Leaf     // node certificate: NodeName, 127.0.0.1, ::1
	ClientLeaf *pki.Leaf     // controller certificate
	System     *System       // the fake host
	Server     *node.Server  // the agent
	Addr       string        // host:port of the agent
	Client     *agent.Client // a client of the agent with ClientLeaf
	opts       Options
}

// Start starts an agent server for opts on 127.0.0.1 and returns it with
// a client. Both are shut down when tb ends.
func Start(tb testing.TB, opts Options) *Env {
	tb.Helper()
	if opts.System == nil {
		opts.System = NewSystem(tb)
	}
	if opts.Version == "" {
		opts.Version = AgentVersion
	}
	if opts.HealthTimeout == 0 {
		opts.HealthTimeout = 2 * time.Second
	}
	if opts.DownloadTimeout == 0 {
		opts.DownloadTimeout = 5 * time.Second
	}
	e := &Env{System: opts.System, opts: opts}
	var err error
	e.CA, err = pki.NewCA("agenttest CA")
	must(tb, err)
	e.Bundle = pki.NewBundle(e.CA.Cert)
	e.ServerLeaf, err = e.CA.IssueServer(NodeName, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	must(tb, err)
	e.ClientLeaf, err = e.CA.IssueClient(pki.ControllerName)
	must(tb, err)

	e.Server, e.Addr = ServeOn(tb, "127.0.0.1:0", e.ServerConfig())
	cfg := e.ClientConfig()
	e.Client, err = agent.NewClient(cfg)
	must(tb, err)
	tb.Cleanup(e.Client.Close)
	return e
}

// ServerConfig returns the configuration of the Env's server.
func (e *Env) ServerConfig() node.ServerConfig {
	key, _ := e.ServerLeaf.KeyPEM()
	return node.ServerConfig{
		CABundle:        e.Bundle.PEM(),
		CertPEM:         e.ServerLeaf.CertPEM(),
		KeyPEM:          key,
		System:          e.System,
		Version:         e.opts.Version,
		ReleaseURL:      e.opts.ReleaseURL,
		Logger:          e.opts.Logger,
		HealthTimeout:   e.opts.HealthTimeout,
		DownloadTimeout: e.opts.DownloadTimeout,
		Now:             e.opts.Now,
	}
}

// ClientConfig returns a configuration for a client of the Env's agent
// with the controller certificate; tests change it to build other
// clients.
func (e *Env) ClientConfig() agent.ClientConfig {
	key, _ := e.ClientLeaf.KeyPEM()
	return agent.ClientConfig{
		Address:       e.Addr,
		CABundle:      e.Bundle.PEM(),
		CertPEM:       e.ClientLeaf.CertPEM(),
		KeyPEM:        key,
		Logger:        e.opts.ClientLogger,
		ExpectVersion: e.opts.Version,
	}
}

// NewClient returns a client of the Env's agent whose configuration is
// ClientConfig changed by edit (which may be nil). It is closed when tb
// ends.
func (e *Env) NewClient(tb testing.TB, edit func(*agent.ClientConfig)) *agent.Client {
	tb.Helper()
	cfg := e.ClientConfig()
	if edit != nil {
		edit(&cfg)
	}
	c, err := agent.NewClient(cfg)
	must(tb, err)
	tb.Cleanup(c.Close)
	return c
}

// ServeOn starts an agent server for cfg listening on addr (for example
// "127.0.0.1:0") and returns it with its address. It is shut down when tb
// ends, and tb fails if Serve returned another error than
// http.ErrServerClosed.
func ServeOn(tb testing.TB, addr string, cfg node.ServerConfig) (*node.Server, string) {
	tb.Helper()
	srv, err := node.NewServer(cfg)
	must(tb, err)
	ln, err := net.Listen("tcp", addr)
	must(tb, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(tb.Context()), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("agenttest: Serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
