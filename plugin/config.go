package plugin

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
)

// Options tune how plugins are run. The zero value is usable.
type Options struct {
	// Timeout bounds one call (default DefaultTimeout); when it passes the
	// plugin's process group is killed.
	Timeout time.Duration
	// CapabilitiesTimeout bounds --capabilities (default
	// DefaultCapabilitiesTimeout).
	CapabilitiesTimeout time.Duration
	// MaxResponse bounds a response, in bytes (default
	// DefaultMaxResponse).
	MaxResponse int64
	// Logger receives the plugins' standard error, secrets redacted;
	// nil discards it.
	Logger *slog.Logger
	// Dispatcher applies what a plugin's dispatchRequests ask for; nil
	// refuses such responses (see RegistryDispatcher).
	Dispatcher Dispatcher
	// MaxRounds bounds the dispatch rounds of one call (default 16).
	MaxRounds int
	// DispatchConcurrency bounds how many requests of one dispatch round
	// run at once (default 8); results go back to the plugin in the
	// order it asked.
	DispatchConcurrency int
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CapabilitiesTimeout <= 0 {
		o.CapabilitiesTimeout = DefaultCapabilitiesTimeout
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = DefaultMaxResponse
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 16
	}
	if o.DispatchConcurrency <= 0 {
		o.DispatchConcurrency = 8
	}
	return o
}

// Config is a plugin's configuration: its section of the configuration
// file, providers.<name>, passed to the plugin as the requests' "config"
// as it is. The values of secret keys (see IsSecretKey and
// Capabilities.SecretConfigFields) are redacted when the Config is
// marshalled and from whatever a plugin writes back. A Config is
// immutable and safe for concurrent use.
type Config struct {
	values  map[string]any
	secrets []string // the keys declared secret by the plugin
}

// NewConfig returns the configuration values, with the keys in
// secretKeys (besides those IsSecretKey recognises) secret.
func NewConfig(values map[string]any, secretKeys ...string) *Config {
	return &Config{values: values, secrets: secretKeys}
}

// Values returns the configuration as the plugin receives it. The map
// must not be modified.
func (c *Config) Values() map[string]any {
	if c == nil {
		return nil
	}
	return c.values
}

// IsSecretKey reports whether a configuration key holds a secret by its
// name: it ends, in any case, with "secret", "password", "passphrase",
// "token" or "apikey" (tokenSecret, password, apiKey; not tokenId).
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"secret", "password", "passphrase", "token", "apikey"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

func (c *Config) isSecret(key string) bool {
	return IsSecretKey(key) || slices.Contains(c.secrets, key)
}

// secretValues returns every string held under a secret key, longest
// first.
func (c *Config) secretValues() []string {
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, sec bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, sec || c.isSecret(k))
			}
		case []any:
			for _, x := range v {
				walk(x, sec)
			}
		case string:
			if sec && v != "" {
				out = append(out, v)
			}
		}
	}
	if c != nil {
		walk(c.values, false)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redactor returns a Replacer that replaces the secret values with
// secret.Redacted.
func (c *Config) redactor() *strings.Replacer {
	var pairs []string
	for _, v := range c.secretValues() {
		pairs = append(pairs, v, secret.Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// redacted returns a copy of the values with secrets replaced.
func (c *Config) redacted() map[string]any {
	var copyOf func(v any, sec bool) any
	copyOf = func(v any, sec bool) any {
		switch v := v.(type) {
		case map[string]any:
			m := make(map[string]any, len(v))
			for k, x := range v {
				m[k] = copyOf(x, sec || c.isSecret(k))
			}
			return m
		case []any:
			l := make([]any, len(v))
			for i, x := range v {
				l[i] = copyOf(x, sec)
			}
			return l
		}
		if sec && v != nil {
			return secret.Redacted
		}
		return v
	}
	m, _ := copyOf(c.Values(), false).(map[string]any)
	return m
}

// MarshalYAML writes the configuration with its secrets redacted, for
// `openctl config view`.
func (c *Config) MarshalYAML() (any, error) { return c.redacted(), nil }

// String returns the configuration with its secrets redacted.
func (c *Config) String() string { return fmt.Sprint(c.redacted()) }

// Contexts returns nil: a plugin's section is passed on whole, and
// contexts within it are the plugin's business.
func (c *Config) Contexts() []registry.ContextInfo { return nil }

// WithContext refuses: see Contexts.
func (c *Config) WithContext(name string) (registry.DriverConfig, error) {
	return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: context %q: exec plugins have no contexts openctl can select; their configuration section is passed to them as it is", name))
}

// decodeSection turns the YAML nodes of a section into plain values.
func decodeSection(nodes map[string]*yaml.Node) (map[string]any, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(nodes))
	for k, n := range nodes {
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("plugin: providers.%s: %w", k, err)
		}
		out[k] = normalize(v)
	}
	return out, nil
}

// normalize turns YAML's map[string]any / map[any]any into
// JSON-marshallable values.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normalize(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = normalize(x)
		}
	}
	return v
}

var _ registry.DriverConfig = (*Config)(nil)
