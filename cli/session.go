package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// sessionOptions says what a command needs.
type sessionOptions struct {
	// sandbox runs against the drivers' simulators, started in this
	// process when first needed, with in-memory state, instead of the
	// configuration.
	sandbox bool
	// noProviders opens only the state store.
	noProviders bool
	observer    func(openctl.Event)
	lockWait    time.Duration
}

// session is an engine with its providers and store, for one command.
// Providers are opened lazily: only those the command's resources route
// to, so that a provider without configuration breaks only the commands
// that need it.
type session struct {
	engine *openctl.Engine
	reg    *registry.Registry
	store  state.Store
	cfg    *config.Config // nil in the sandbox

	mu      sync.Mutex     // guards closers (providers open concurrently)
	closers []func() error // run in reverse order by close
}

func (s *session) onClose(fn func() error) {
	s.mu.Lock()
	s.closers = append(s.closers, fn)
	s.mu.Unlock()
}

func (s *session) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// loadConfig loads the configuration file and the environment overlay,
// printing the warnings.
func (a *app) loadConfig() (*config.Config, error) {
	cfg, warnings, err := config.LoadEnv(a.configPath, a.getenv)
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
	reg := &registry.Registry{}
	s.reg = reg
	concurrency := config.DefaultConcurrency
	if o.sandbox {
		for _, d := range a.opts.Drivers {
			if err := reg.RegisterDriver(d, func() (registry.Provider, error) { return a.openSandbox(ctx, s, d) }); err != nil {
				return s, err
			}
		}
		s.store = state.NewMemory()
	} else {
		cfg, err := a.loadConfig()
		if err != nil {
			return s, err
		}
		s.cfg = cfg
		concurrency = cfg.Concurrency()
		if !o.noProviders {
			sel, err := a.contextSelection(cfg)
			if err != nil {
				return s, err
			}
			for _, d := range a.opts.Drivers {
				if pd, ok := d.(plugin.Driver); ok && cfg.Plugins.Timeout > 0 {
					pd.Options.Timeout = cfg.Plugins.Timeout
					d = pd
				}
				if err := reg.RegisterDriver(d, func() (registry.Provider, error) { return a.openProvider(ctx, s, cfg, sel, d) }); err != nil {
					return s, err
				}
			}
		}
		st, err := a.openStoreDSN(ctx, cfg)
		if err != nil {
			return s, err
		}
		s.store = st
		s.onClose(func() error { closeStore(st); return nil })
	}
	s.onClose(reg.Close)
	opts := []openctl.Option{
		openctl.WithRegistry(reg),
		openctl.WithStore(s.store),
		openctl.WithConcurrency(concurrency),
		openctl.WithLogger(a.log),
		openctl.WithLockWait(o.lockWait),
	}
	if o.observer != nil {
		opts = append(opts, openctl.WithObserver(o.observer))
	}
	e, err := openctl.New(opts...)
	if err != nil {
		return s, err
	}
	s.engine = e
	return s, nil
}

// openSandbox starts d's simulator and opens its provider on it.
func (a *app) openSandbox(ctx context.Context, s *session, d registry.Driver) (registry.Provider, error) {
	info := d.Info()
	sb, ok := d.(registry.Sandboxer)
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("the %s provider has no sandbox: run without --sandbox against a configured %s", info.Name, info.Name))
	}
	box, err := sb.Sandbox(ctx, registry.SandboxOptions{Logger: a.log})
	if err != nil {
		return nil, err
	}
	s.onClose(box.Close)
	a.note("openctl: --sandbox: running against %s with in-memory state; nothing is kept after this command", box.Description)
	p, err := d.Open(ctx, box.Config, registry.OpenOptions{Logger: a.log, Registry: s.reg})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// providerConfig returns d's configuration in effect: its section of the
// file, the environment over it, the --context selection applied.
func (a *app) providerConfig(cfg *config.Config, sel contextSelection, d registry.Driver) (registry.DriverConfig, error) {
	name := d.Info().Name
	dc, err := d.DecodeConfig(cfg.Section(name))
	if err != nil {
		return nil, err
	}
	if ec, ok := d.(registry.EnvConfigurer); ok {
		if dc, err = ec.ConfigFromEnv(dc, a.getenv); err != nil {
			return nil, err
		}
	}
	if want := sel.forProvider(name, dc); want != "" {
		return dc.WithContext(want)
	}
	return dc, nil
}

// openProvider opens d from the configuration, for a session.
func (a *app) openProvider(ctx context.Context, s *session, cfg *config.Config, sel contextSelection, d registry.Driver) (registry.Provider, error) {
	dc, err := a.providerConfig(cfg, sel, d)
	if err != nil {
		return nil, err
	}
	p, err := d.Open(ctx, dc, registry.OpenOptions{Logger: a.log, Registry: s.reg})
	if err != nil {
		return nil, err
	}
	if c, ok := p.(io.Closer); ok {
		s.onClose(c.Close)
	}
	return p, nil
}

// contextSelection is what --context asked for: a context for every
// provider that has one of that name (--context lab), or one per provider
// (--context PROVIDER=NAME,PROVIDER=NAME).
type contextSelection struct {
	any        string            // --context NAME
	byProvider map[string]string // --context provider=NAME,...
	// others reports, for --context NAME, whether a provider other than
	// the one asking has a context NAME.
	others func(provider string) bool
}

// contextSelection parses --context, checking the provider names.
func (a *app) contextSelection(cfg *config.Config) (contextSelection, error) {
	v := strings.TrimSpace(a.contextName)
	if v == "" {
		return contextSelection{}, nil
	}
	if !strings.Contains(v, "=") {
		sel := contextSelection{any: v}
		sel.others = func(provider string) bool {
			for _, d := range a.opts.Drivers {
				if d.Info().Name == provider {
					continue
				}
				dc, err := a.providerConfig(cfg, contextSelection{}, d)
				if err == nil && slices.ContainsFunc(dc.Contexts(), func(c registry.ContextInfo) bool { return c.Name == v }) {
					return true
				}
			}
			return false
		}
		return sel, nil
	}
	sel := contextSelection{byProvider: map[string]string{}}
	for part := range strings.SplitSeq(v, ",") {
		p, c, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || p == "" || c == "" {
			return sel, usagef("--context %q: want NAME or PROVIDER=NAME[,PROVIDER=NAME...]", a.contextName)
		}
		if !slices.Contains(a.driverNames(), p) {
			return sel, usagef("--context: no provider %q (providers: %s)", p, strings.Join(a.driverNames(), ", "))
		}
		sel.byProvider[p] = c
	}
	return sel, nil
}

// forProvider returns the context a provider is to use, "" for its
// default. --context NAME applies to every provider that has a context
// NAME; a provider without one keeps its default when another provider
// has it, and is refused otherwise (WithContext lists its contexts).
func (sel contextSelection) forProvider(name string, dc registry.DriverConfig) string {
	if sel.byProvider != nil {
		return sel.byProvider[name]
	}
	if sel.any == "" {
		return ""
	}
	if slices.ContainsFunc(dc.Contexts(), func(c registry.ContextInfo) bool { return c.Name == sel.any }) || !sel.others(name) {
		return sel.any
	}
	return ""
}

// driverNames lists the compiled-in providers.
func (a *app) driverNames() []string {
	var names []string
	for _, d := range a.opts.Drivers {
		names = append(names, d.Info().Name)
	}
	return names
}

// openStoreDSN opens the configured state store.
func (a *app) openStoreDSN(ctx context.Context, cfg *config.Config) (state.Store, error) {
	dsn, err := cfg.StateDSN()
	if err != nil {
		return nil, err
	}
	return a.openDSN(ctx, dsn)
}

// openDSN opens the store a DSN names through the compiled-in backends.
func (a *app) openDSN(ctx context.Context, dsn string) (state.Store, error) {
	return a.backends.Open(ctx, dsn, state.OpenOptions{Logger: a.log, Passphrase: func() (secret.Secret, error) { return seal.PassphraseFrom(a.env) }})
}

// offlineRegistry is a registry of the compiled-in drivers that is never
// opened: it resolves kind names and lists actions without a
// configuration.
func (a *app) offlineRegistry() (*registry.Registry, error) {
	reg := &registry.Registry{}
	for _, d := range a.opts.Drivers {
		name := d.Info().Name
		if err := reg.RegisterDriver(d, func() (registry.Provider, error) {
			return nil, errcode.New(errcode.Internal, "openctl: the "+name+" provider is not open here (an openctl bug)")
		}); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// getenv reads the environment of the run.
func (a *app) getenv(key string) string {
	if a.env != nil {
		return a.env(key)
	}
	return os.Getenv(key)
}
