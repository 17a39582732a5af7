package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/secret"
)

// Config is a user's openctl configuration: providers and their contexts
// and credentials, where state is kept, and how applies run. Load and
// LoadEnv read it; Save writes it back.
//
// A Config is a plain value: safe for concurrent reads, not for
// concurrent modification. Its methods other than Save and UseContext
// only read it.
type Config struct {
	// Path is the file the configuration was loaded from, or last saved
	// to; "" if no file existed.
	Path string `yaml:"-"`
	// Providers holds each provider's section by provider name
	// ("proxmox"). Names other than "proxmox" are kept as they are, for
	// providers an embedder compiles in.
	Providers map[string]*Provider `yaml:"providers,omitempty"`
	// State says where openctl keeps its state.
	State State `yaml:"state,omitempty"`
	// Apply tunes apply and delete runs.
	Apply Apply `yaml:"apply,omitempty"`

	// meta is what Load learnt besides the values; see meta.
	meta meta
}

// meta holds what Load learnt about a Config besides its values. It is
// copied by clone and never written by Save.
type meta struct {
	// source is the file Load looked at, whether it existed or not; it is
	// named in messages and is where Save writes when Path is "".
	source string
	// home is $OPENCTL_HOME as LoadEnv's getenv saw it, "" if unset; the
	// default state directory is under it.
	home string
	// pos maps field paths to where their keys are in the file, for
	// messages.
	pos map[string]position
	// raw maps the field paths of file paths Load expanded (~, relative
	// paths) to what the file said, so that Save writes them unchanged.
	raw map[string]rawPath
	// env records what the environment overlay changed, so that Save
	// leaves it out; nil if it changed nothing.
	env *overlay
	// redacted marks a copy made by Redacted, which Save refuses.
	redacted bool
}

// rawPath is a file path as the file wrote it and as Load expanded it.
type rawPath struct{ file, expanded string }

// position is a place in the configuration file.
type position struct{ line, column int }

// Provider is one provider's section: its contexts (endpoints), the
// credentials they use by name, and defaults for resources.
type Provider struct {
	// DefaultContext is the context used when neither a resource nor the
	// command line names one. It may be empty when there is exactly one
	// context.
	DefaultContext string `yaml:"default-context,omitempty"`
	// Contexts are the provider's endpoints, by name.
	Contexts map[string]*Context `yaml:"contexts,omitempty"`
	// Credentials are named sets of credentials that contexts refer to.
	Credentials map[string]*Credentials `yaml:"credentials,omitempty"`
	// Defaults are provider-specific defaults for resources. The Proxmox
	// provider knows "storage" and "bridge".
	Defaults map[string]string `yaml:"defaults,omitempty"`
}

// Context is one endpoint of a provider.
type Context struct {
	// Endpoint is the API URL, e.g. https://pve.lab:8006.
	Endpoint string `yaml:"endpoint,omitempty"`
	// Node is the default node for resources that name none.
	Node string `yaml:"node,omitempty"`
	// Credentials names an entry of the provider's Credentials.
	Credentials string `yaml:"credentials,omitempty"`
	// Fingerprint pins the server certificate's SHA-256 (AB:CD:...).
	Fingerprint string `yaml:"fingerprint,omitempty"`
	// CAFile is a PEM file of CA certificates to verify the server with.
	// Load expands a leading ~/ and makes a relative path relative to the
	// configuration file's directory.
	CAFile string `yaml:"caFile,omitempty"`
	// InsecureSkipVerify turns TLS verification off. Prefer Fingerprint.
	InsecureSkipVerify bool `yaml:"insecureSkipVerify,omitempty"`
}

// Credentials are an API token. Exactly one of TokenSecret and
// TokenSecretFile is set.
type Credentials struct {
	// TokenID is the token's id, e.g. root@pam!openctl.
	TokenID string `yaml:"tokenId,omitempty"`
	// TokenSecret is the token's secret. It is redacted in every output
	// but the file Save writes.
	TokenSecret secret.Secret `yaml:"tokenSecret,omitempty"`
	// TokenSecretFile is a file holding the token's secret, read when the
	// provider connects. Load expands a leading ~/ and makes a relative
	// path relative to the configuration file's directory.
	TokenSecretFile string `yaml:"tokenSecretFile,omitempty"`
}

// The state backends.
const (
	BackendFile     = "file"
	BackendPostgres = "postgres"
)

// State says where openctl keeps its state.
type State struct {
	// Backend is BackendFile or BackendPostgres. Empty means postgres if
	// DSN is set, else file.
	Backend string `yaml:"backend,omitempty"`
	// Dir is the file backend's directory; empty means
	// $OPENCTL_HOME/state or ~/.openctl/state (state.DefaultDir). Load
	// expands a leading ~/ and makes a relative path relative to the
	// configuration file's directory.
	Dir string `yaml:"dir,omitempty"`
	// DSN names the PostgreSQL database of the postgres backend
	// (postgres://user:password@host:5432/db). It is a secret: it may
	// hold a password.
	DSN secret.Secret `yaml:"dsn,omitempty"`
}

// DefaultConcurrency is how many resources an apply works on at once when
// the configuration does not say.
const DefaultConcurrency = 4

// Apply tunes apply and delete runs.
type Apply struct {
	// Concurrency is how many resources are worked on at once; 0 means
	// DefaultConcurrency.
	Concurrency int `yaml:"concurrency,omitempty"`
}

// ContextInfo describes one context, for listings such as
// `openctl config get-contexts`.
type ContextInfo struct {
	Name        string // the context's name
	Endpoint    string // its API URL
	Node        string // its default node, if any
	Credentials string // the name of its credentials
	Current     bool   // whether it is the default context
}

// Concurrency returns Apply.Concurrency, or DefaultConcurrency if that is
// not positive.
func (c *Config) Concurrency() int {
	if c.Apply.Concurrency > 0 {
		return c.Apply.Concurrency
	}
	return DefaultConcurrency
}

// StateBackend returns the state backend in use: State.Backend, or when
// that is empty BackendPostgres if State.DSN is set and BackendFile
// otherwise.
func (c *Config) StateBackend() string {
	switch {
	case c.State.Backend != "":
		return c.State.Backend
	case !c.State.DSN.IsZero():
		return BackendPostgres
	default:
		return BackendFile
	}
}

// Contexts lists the contexts of provider, sorted by name; nil if the
// provider has none. The current context is the provider's
// DefaultContext, or the only context when there is one and no default.
func (c *Config) Contexts(provider string) []ContextInfo {
	p := c.Providers[provider]
	if p == nil || len(p.Contexts) == 0 {
		return nil
	}
	current := p.DefaultContext
	if current == "" && len(p.Contexts) == 1 {
		for name := range p.Contexts {
			current = name
		}
	}
	out := make([]ContextInfo, 0, len(p.Contexts))
	for _, name := range sortedKeys(p.Contexts) {
		info := ContextInfo{Name: name, Current: name == current}
		if x := p.Contexts[name]; x != nil {
			info.Endpoint, info.Node, info.Credentials = x.Endpoint, x.Node, x.Credentials
		}
		out = append(out, info)
	}
	return out
}

// UseContext makes name the default context of provider. An unknown
// provider or context is an errcode.Invalid error listing the known ones,
// and so is the context "env" that the environment overlay defines, which
// Save would not keep.
func (c *Config) UseContext(provider, name string) error {
	p := c.Providers[provider]
	if p == nil {
		return &Error{Msg: "no provider " + quote(provider) + " is configured (providers: " + list(sortedKeys(c.Providers)) + ")"}
	}
	if _, ok := p.Contexts[name]; !ok {
		return &Error{Field: "providers." + pathKey(provider) + ".contexts", Msg: "no context " + quote(name) + " (contexts: " + list(sortedKeys(p.Contexts)) + ")"}
	}
	if ov := c.meta.env; ov != nil && ov.proxmox && provider == ProviderProxmox && name == EnvContext && ov.fileCtx == nil {
		// Save leaves the overlay out: the choice would not be kept.
		return &Error{Msg: "context " + quote(EnvContext) + " is defined by the environment (" + EnvProxmoxURL + " and the variables with it), not by a file: it is the default while they are set, and cannot be saved as one"}
	}
	p.DefaultContext = name
	return nil
}

// Redacted returns a deep copy of c in which every secret that is set
// holds the text "[redacted]", for showing the configuration
// (`openctl config view`). Save refuses to write the copy.
func (c *Config) Redacted() *Config {
	out := c.clone()
	red := secret.New(secret.Redacted)
	for _, p := range out.Providers {
		if p == nil {
			continue
		}
		for _, cr := range p.Credentials {
			if cr != nil && !cr.TokenSecret.IsZero() {
				cr.TokenSecret = red
			}
		}
	}
	if !out.State.DSN.IsZero() {
		out.State.DSN = red
	}
	out.meta.redacted = true
	return out
}

// clone returns a deep copy of c.
func (c *Config) clone() *Config {
	out := &Config{Path: c.Path, State: c.State, Apply: c.Apply, meta: c.meta}
	out.meta.pos = cloneMap(c.meta.pos)
	out.meta.raw = cloneMap(c.meta.raw)
	if c.Providers != nil {
		out.Providers = make(map[string]*Provider, len(c.Providers))
		for name, p := range c.Providers {
			out.Providers[name] = p.clone()
		}
	}
	return out
}

// clone returns a deep copy of p (nil for nil).
func (p *Provider) clone() *Provider {
	if p == nil {
		return nil
	}
	out := &Provider{DefaultContext: p.DefaultContext, Defaults: cloneMap(p.Defaults)}
	if p.Contexts != nil {
		out.Contexts = make(map[string]*Context, len(p.Contexts))
		for n, x := range p.Contexts {
			out.Contexts[n] = clonePtr(x)
		}
	}
	if p.Credentials != nil {
		out.Credentials = make(map[string]*Credentials, len(p.Credentials))
		for n, x := range p.Credentials {
			out.Credentials[n] = clonePtr(x)
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// list renders names for a message: "a, b, c", or "none".
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// quote quotes a name for a message.
func quote(s string) string { return strconv.Quote(s) }
