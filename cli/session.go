package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// providerSpec is a provider compiled into the command. It is the only
// place that names one: kinds, actions and their flags come from the
// provider itself.
type providerSpec struct {
	name string
	// offline returns an instance that is never asked to contact
	// anything: the command reads its Kinds and Actions for help,
	// completion and resolving kind names without a configuration.
	offline func() (registry.Provider, error)
	// open builds the provider from the configuration; contextName is
	// --context ("" for the configured default).
	open func(cfg *config.Config, contextName string, log *slog.Logger) (registry.Provider, error)
}

// providers lists the providers compiled in.
var providers = []providerSpec{{
	name: "proxmox",
	offline: func() (registry.Provider, error) {
		// proxmox.New contacts nothing; a syntactically valid context is
		// all it needs.
		return proxmox.New(proxmox.Config{Contexts: map[string]proxmox.Context{"offline": {
			Endpoint:    "https://proxmox.invalid:8006",
			TokenID:     "openctl@pve!offline",
			TokenSecret: secret.New("offline"),
		}}})
	},
	open: func(cfg *config.Config, contextName string, log *slog.Logger) (registry.Provider, error) {
		pc, err := cfg.Proxmox(contextName)
		if err != nil {
			return nil, err
		}
		pc.Logger = log
		return proxmox.New(pc)
	},
}}

// offlineRegistry returns a registry of the offline provider instances:
// it resolves kind names and lists actions, and must never be used to
// read or change anything.
func offlineRegistry() (*registry.Registry, error) {
	reg := &registry.Registry{}
	for _, p := range providers {
		inst, err := p.offline()
		if err != nil {
			return nil, fmt.Errorf("openctl: provider %s: %w", p.name, err)
		}
		if err := reg.Register(inst); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// sessionOptions says what a command needs.
type sessionOptions struct {
	// sandbox runs against a simulator started in this process, with
	// in-memory state, instead of the configuration.
	sandbox bool
	// noProviders opens only the state store.
	noProviders bool
	observer    func(openctl.Event)
	lockWait    time.Duration
}

// session is an engine with its providers and store, for one command.
type session struct {
	engine  *openctl.Engine
	store   state.Store
	cfg     *config.Config // nil in the sandbox
	closers []func() error // run in reverse order by close
}

func (s *session) close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

// loadConfig loads the configuration file and the environment overlay,
// printing the warnings.
func (a *app) loadConfig() (*config.Config, error) {
	cfg, warnings, err := config.Load(a.configPath)
	for _, w := range warnings {
		fmt.Fprintln(a.stderr, "openctl: warning: "+w.String())
	}
	return cfg, err
}

// open builds the engine a command runs on. The caller must call close.
func (a *app) open(ctx context.Context, o sessionOptions) (s *session, err error) {
	s = &session{}
	defer func() {
		if err != nil {
			_ = s.close()
			s = nil
		}
	}()
	var provs []registry.Provider
	concurrency := config.DefaultConcurrency
	if o.sandbox {
		url, p, closeSrv, err := a.startSandbox()
		if err != nil {
			return s, err
		}
		s.closers = append(s.closers, closeSrv)
		provs = append(provs, p)
		if c, ok := p.(io.Closer); ok {
			s.closers = append(s.closers, c.Close)
		}
		s.store = state.NewMemory()
		a.note("openctl: --sandbox: running against a simulated Proxmox VE (nodes pve1..pve3) at %s with in-memory state; nothing is kept after this command", url)
	} else {
		cfg, err := a.loadConfig()
		if err != nil {
			return s, err
		}
		s.cfg = cfg
		concurrency = cfg.Concurrency()
		if !o.noProviders {
			for _, spec := range providers {
				p, err := spec.open(cfg, a.contextName, a.log)
				if err != nil {
					return s, err
				}
				provs = append(provs, p)
				if c, ok := p.(io.Closer); ok {
					s.closers = append(s.closers, c.Close)
				}
			}
		}
		st, closeStore, err := cfg.OpenStoreWith(ctx, config.StoreOptions{Logger: a.log})
		if err != nil {
			return s, err
		}
		if closeStore != nil {
			s.closers = append(s.closers, closeStore)
		}
		s.store = st
	}
	opts := []openctl.Option{
		openctl.WithProviders(provs...),
		openctl.WithStore(s.store),
		openctl.WithConcurrency(concurrency),
		openctl.WithLogger(a.log),
		openctl.WithLockWait(o.lockWait),
	}
	if o.observer != nil {
		opts = append(opts, openctl.WithObserver(o.observer))
	}
	// The session closes the providers itself (not Engine.Close), also
	// when New fails.
	e, err := openctl.New(opts...)
	if err != nil {
		return s, err
	}
	s.engine = e
	return s, nil
}

// startSandbox starts the Proxmox VE simulator for --sandbox and returns
// its URL, a provider connected to it, and a function that stops it.
func (a *app) startSandbox() (string, registry.Provider, func() error, error) {
	opts := append(sandboxLayout(3, defaultSharedStorage), proxmoxtest.WithLogger(a.log))
	srv, err := proxmoxtest.New(opts...)
	if err != nil {
		return "", nil, nil, err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return "", nil, nil, err
	}
	id, tok := srv.Token()
	p, err := proxmox.New(proxmox.Config{
		Contexts: map[string]proxmox.Context{"sandbox": {
			Endpoint: srv.URL(), TokenID: id, TokenSecret: secret.New(tok), Fingerprint: srv.Fingerprint(),
		}},
		Logger: a.log,
	})
	if err != nil {
		srv.Close()
		return "", nil, nil, err
	}
	return srv.URL(), p, func() error { srv.Close(); return nil }, nil
}
