package main

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
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/errcode"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2 // a bad flag or configuration
)

// shutdownTimeout bounds the wait for requests in flight after SIGINT or
// SIGTERM; the systemd unit's TimeoutStopSec is longer.
const shutdownTimeout = 30 * time.Second

// config is the command line.
type config struct {
	listen, ca, cert, key, releaseURL string
	healthTimeout                     time.Duration
}

// run is the whole program: it parses args, serves until ctx is done or a
// SIGINT or SIGTERM arrives, and returns the exit status. version is the
// agent's version (--version, /v1/info and every response's
// Openctl-Agent-Version header); newSystem builds the System the agent
// drives (tests pass a fake).
func run(ctx context.Context, version string, args []string, stdout, stderr io.Writer, newSystem func() (node.System, error)) int {
	var c config
	fs := flag.NewFlagSet("openctl-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", agent.DefaultListenAddr, "TCP address to serve on")
	fs.StringVar(&c.ca, "ca", filepath.Join(agent.DefaultConfigDir, pki.CACertFile), "PEM bundle of the CAs whose client certificates are accepted")
	fs.StringVar(&c.cert, "cert", filepath.Join(agent.DefaultConfigDir, pki.ServerCertFile), "PEM server certificate")
	fs.StringVar(&c.key, "key", filepath.Join(agent.DefaultConfigDir, pki.ServerKeyFile), "PEM server private key")
	fs.StringVar(&c.releaseURL, "release-url", node.DefaultReleaseURL, "base URL k3s releases are downloaded from")
	fs.DurationVar(&c.healthTimeout, "health-timeout", node.DefaultHealthTimeout, "how long k3s has, after an upgrade's restart, to be up and running and report the new version before the previous binary is restored")
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
	sys, err := newSystem()
	if err != nil {
		return fail(exitFailure, "openctl-agent: cannot inspect the host", err)
	}
	srv, err := node.NewServer(node.ServerConfig{
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
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fail(exitFailure, "openctl-agent: cannot listen", err)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

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
		case <-hup:
			if err := c.reload(srv); err != nil {
				log.Error("openctl-agent: credentials not reloaded, keeping the old ones", "error", err.Error())
			} else {
				log.Info("openctl-agent: credentials reloaded")
			}
		case <-ctx.Done():
			stop() // a second signal kills the process at once
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
		if *f.dst, err = os.ReadFile(f.path); err != nil {
			return nil, nil, nil, fmt.Errorf("%s file: %w", f.flag, err)
		}
	}
	return ca, cert, key, nil
}

// reload re-reads the credentials into srv.
func (c config) reload(srv *node.Server) error {
	ca, cert, key, err := c.readCredentials()
	if err != nil {
		return err
	}
	return srv.Reload(ca, cert, key)
}
