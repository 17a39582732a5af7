package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// Exit statuses of [Command.Run].
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2 // a bad flag or configuration
)

// shutdownTimeout bounds the wait for requests in flight once the
// command's context ends; the systemd unit's TimeoutStopSec is longer.
const shutdownTimeout = 30 * time.Second

// Command is the node agent as a program: cmd/openctl-agent is a Command
// run with the process's signals, and a sandbox runs one per simulated
// host in process. Its flags, exit statuses and log lines are
// cmd/openctl-agent's.
type Command struct {
	// Version is the agent's version (--version, /v1/info and every
	// response's Openctl-Agent-Version header).
	Version string
	// Stdout and Stderr receive --version and the JSON log lines.
	Stdout, Stderr io.Writer
	// NewSystem builds the System the agent drives.
	NewSystem func() (System, error)
	// ReadFile reads the credential files; nil: os.ReadFile.
	ReadFile func(path string) ([]byte, error)
	// Listen opens the listener of --listen; nil: net.Listen.
	Listen func(network, addr string) (net.Listener, error)
	// Reload receives a value each time the credential files are to be
	// re-read (SIGHUP); nil: never.
	Reload <-chan struct{}
}

// config is the command line.
type config struct {
	listen, ca, cert, key, releaseURL string
	healthTimeout                     time.Duration
	readFile                          func(string) ([]byte, error)
}

// Run parses args, serves until ctx ends, then lets requests in flight
// finish (at most 30 seconds) and returns the exit status: 0, 1 for a
// failure, 2 for a usage or configuration error.
func (cmd Command) Run(ctx context.Context, args []string) int {
	stdout, stderr, version := cmd.Stdout, cmd.Stderr, cmd.Version
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	c := config{readFile: cmd.ReadFile}
	if c.readFile == nil {
		c.readFile = os.ReadFile
	}
	listen := cmd.Listen
	if listen == nil {
		listen = net.Listen
	}
	fs := flag.NewFlagSet("openctl-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", agent.DefaultListenAddr, "TCP address to serve on")
	fs.StringVar(&c.ca, "ca", filepath.Join(agent.DefaultConfigDir, pki.CACertFile), "PEM bundle of the CAs whose client certificates are accepted")
	fs.StringVar(&c.cert, "cert", filepath.Join(agent.DefaultConfigDir, pki.ServerCertFile), "PEM server certificate")
	fs.StringVar(&c.key, "key", filepath.Join(agent.DefaultConfigDir, pki.ServerKeyFile), "PEM server private key")
	fs.StringVar(&c.releaseURL, "release-url", DefaultReleaseURL, "base URL k3s releases are downloaded from")
	fs.DurationVar(&c.healthTimeout, "health-timeout", DefaultHealthTimeout, "how long k3s has, after an upgrade's restart, to be up and running and report the new version before the previous binary is restored")
	printVersion := fs.Bool("version", false, "print the agent version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "openctl-agent: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	if *printVersion {
		fmt.Fprintln(stdout, version)
		return exitOK
	}
	if c.healthTimeout <= 0 {
		fmt.Fprintf(stderr, "openctl-agent: --health-timeout %v: must be positive\n", c.healthTimeout)
		return exitUsage
	}

	log := slog.New(slog.NewJSONHandler(stderr, nil))
	fail := func(status int, msg string, err error, attrs ...any) int {
		log.Error(msg, append([]any{"error", err.Error()}, attrs...)...)
		return status
	}
	ca, cert, key, err := c.readCredentials()
	if err != nil {
		return fail(exitUsage, "openctl-agent: cannot read credentials", err)
	}
	sys, err := cmd.NewSystem()
	if err != nil {
		return fail(exitFailure, "openctl-agent: cannot inspect the host", err)
	}
	srv, err := NewServer(ServerConfig{
		CABundle:      ca,
		CertPEM:       cert,
		KeyPEM:        key,
		System:        sys,
		Version:       version,
		ReleaseURL:    c.releaseURL,
		HealthTimeout: c.healthTimeout,
		Logger:        log,
	})
	if err != nil {
		status := exitFailure
		if errors.Is(err, errcode.Invalid) {
			status = exitUsage
		}
		return fail(status, "openctl-agent: invalid configuration", err, "ca", c.ca, "cert", c.cert, "key", c.key, "releaseURL", c.releaseURL)
	}
	ln, err := listen("tcp", c.listen)
	if err != nil {
		return fail(exitFailure, "openctl-agent: cannot listen", err)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	attrs := []any{"addr", ln.Addr().String(), "version", version}
	if s, ok := sys.(interface{ Init() agent.InitSystem }); ok {
		attrs = append(attrs, "init", s.Init())
	}
	log.Info("openctl-agent: serving", attrs...)

	for {
		select {
		case err := <-served:
			return fail(exitFailure, "openctl-agent: server stopped", err)
		case <-cmd.Reload:
			if err := c.reload(srv); err != nil {
				log.Error("openctl-agent: credentials not reloaded, keeping the old ones", "error", err.Error())
			} else {
				log.Info("openctl-agent: credentials reloaded")
			}
		case <-ctx.Done():
			log.Info("openctl-agent: shutting down", "timeout", shutdownTimeout.String())
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return fail(exitFailure, "openctl-agent: shutdown", err)
			}
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fail(exitFailure, "openctl-agent: server stopped", err)
			}
			log.Info("openctl-agent: stopped")
			return exitOK
		}
	}
}

// readCredentials reads the three PEM files; an error names the flag and
// the file.
func (c config) readCredentials() (ca, cert, key []byte, err error) {
	for _, f := range []struct {
		flag, path string
		dst        *[]byte
	}{{"--ca", c.ca, &ca}, {"--cert", c.cert, &cert}, {"--key", c.key, &key}} {
		if *f.dst, err = c.readFile(f.path); err != nil {
			return nil, nil, nil, fmt.Errorf("%s file: %w", f.flag, err)
		}
	}
	return ca, cert, key, nil
}

// reload re-reads the credentials into srv.
func (c config) reload(srv *Server) error {
	ca, cert, key, err := c.readCredentials()
	if err != nil {
		return err
	}
	return srv.Reload(ca, cert, key)
}
