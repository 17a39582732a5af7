package config

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// Config is a user's openctl configuration: the providers' sections,
// where state is kept, and how applies run. Load and LoadEnv read it;
// Save writes back the default contexts UseContext chose.
//
// A Config knows nothing about any provider: each provider's section,
// providers.<name>, is handed to that provider's driver as a [Section]
// (registry.Driver.DecodeConfig).
//
// A Config is a plain value: safe for concurrent reads, not for
// concurrent modification. Its methods other than Save and UseContext
// only read it.
type Config struct {
	// Path is the file the configuration was loaded from, or last saved
	// to; "" if no file existed.
	Path string
	// State says where openctl keeps its state.
	State State
	// Apply tunes apply and delete runs.
	Apply Apply
	// Plugins tunes how exec plugins are run.
	Plugins Plugins

	// meta is what Load learnt besides the values; see meta.
	meta meta
}

// meta holds what Load learnt about a Config besides its values.
type meta struct {
	// source is the file Load looked at, whether it existed or not; it is
	// named in messages and is where Save writes when Path is "".
	source string
	// home is openctl's home directory as LoadEnv saw it:
	// $OPENCTL_HOME, else ~/.openctl; "" if neither is known.
	home string
	// getenv is the environment LoadEnv read, for Sections.
	getenv func(string) string
	// doc is the file's document, nil when there is no file or it holds
	// no mapping; Save writes it back.
	doc *yaml.Node
	// sections are the providers.<name> nodes of doc, by name.
	sections map[string]*yaml.Node
	// pos maps field paths to where their keys are in the file, for
	// messages.
	pos map[string]position
	// env records what the environment overlay changed; nil if nothing.
	env *overlay
}

// position is a place in the configuration file.
type position struct{ line, column int }

// State says where openctl keeps its state.
type State struct {
	// DSN names the state store: "file:DIR" for the file store (a
	// leading ~/ is the home directory, a relative DIR is relative to the
	// configuration file), "postgres://user@host:5432/db" (or a libpq
	// key=value string) for PostgreSQL. Empty means the file store in
	// $OPENCTL_HOME/state or ~/.openctl/state; see Config.StateDSN. It is
	// a secret: it may hold a password.
	DSN secret.Secret
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

// Plugins tunes how exec plugins (openctl-<name> executables) are run.
type Plugins struct {
	// Timeout bounds one call of a plugin (a Go duration: "30s", "10m");
	// 0 means the plugin package's default.
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Concurrency returns Apply.Concurrency, or DefaultConcurrency if that is
// not positive.
func (c *Config) Concurrency() int {
	if c.Apply.Concurrency > 0 {
		return c.Apply.Concurrency
	}
	return DefaultConcurrency
}

// StateDSN returns the DSN of the state store in use: State.DSN, else the
// file store in "state" under openctl's home directory ($OPENCTL_HOME as
// LoadEnv saw it, else ~/.openctl). An error says there is no home
// directory to default to.
func (c *Config) StateDSN() (string, error) {
	if !c.State.DSN.IsZero() {
		return c.State.DSN.Reveal(), nil
	}
	if c.meta.home == "" {
		return "", inputError(errcode.InputError{Msg: "no home directory for the state: set state.dsn, " + EnvStateDSN + " or " + EnvHome})
	}
	return "file:" + c.meta.home + "/state", nil
}

// ProviderNames returns the names of the provider sections the file has,
// sorted.
func (c *Config) ProviderNames() []string {
	names := make([]string, 0, len(c.meta.sections))
	for n := range c.meta.sections {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Section returns the section of the named provider, providers.<name>,
// for its driver to decode. It is never nil: a file without the section
// (or no file) gives an empty Section.
func (c *Config) Section(provider string) *Section {
	file := c.Path
	if file == "" {
		file = c.meta.source
	}
	return &Section{
		name:   provider,
		file:   file,
		exists: c.Path != "",
		node:   c.meta.sections[provider],
		getenv: c.meta.getenv,
		home:   c.meta.home,
		pos:    map[string]position{},
	}
}

// UseContext makes name the default context of provider in the file
// (providers.<provider>.default-context), for Save to write. It does not
// check that the provider has such a context: its driver knows (see
// registry.DriverConfig.Contexts). A provider the file has no section for
// is an errcode.Invalid error.
func (c *Config) UseContext(provider, name string) error {
	sec := c.meta.sections[provider]
	if sec == nil || sec.Kind != yaml.MappingNode {
		return inputError(errcode.InputError{File: c.Path, Msg: "no provider " + quote(provider) + " is configured in the file (providers: " + list(c.ProviderNames()) + ")"})
	}
	for i := 0; i+1 < len(sec.Content); i += 2 {
		if sec.Content[i].Value == KeyDefaultContext {
			sec.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
			return nil
		}
	}
	sec.Content = append([]*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: KeyDefaultContext},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: name},
	}, sec.Content...)
	return nil
}

// KeyDefaultContext is the key of a provider section that names its
// default context, in the layout every provider section follows (see the
// package documentation).
const KeyDefaultContext = "default-context"

// list renders names for a message: "a, b, c", or "none".
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// quote quotes a name for a message.
func quote(s string) string { return strconv.Quote(s) }

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
