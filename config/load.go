package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// The environment variables that say where the configuration is.
const (
	// EnvConfig names the configuration file.
	EnvConfig = "OPENCTL_CONFIG"
	// EnvHome moves openctl's home directory (default ~/.openctl): the
	// configuration file is config.yaml in it, the state directory state.
	EnvHome = "OPENCTL_HOME"
)

// maxFileSize bounds the configuration file Load reads.
const maxFileSize = 4 << 20

// DefaultPath returns the configuration file's path: $OPENCTL_CONFIG if
// set, else $OPENCTL_HOME/config.yaml if OPENCTL_HOME is set, else
// ~/.openctl/config.yaml.
func DefaultPath() (string, error) { return defaultPath(os.Getenv) }

func defaultPath(getenv func(string) string) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		return expandHome(p, getenv), nil
	}
	if h := getenv(EnvHome); h != "" {
		return filepath.Join(expandHome(h, getenv), "config.yaml"), nil
	}
	home, err := homeDir(getenv)
	if err != nil {
		return "", inputError(errcode.InputError{Msg: "no home directory to find the configuration in (set " + EnvConfig + " or " + EnvHome + ")", Err: err})
	}
	return filepath.Join(home, ".openctl", "config.yaml"), nil
}

// Load reads the configuration file path ("" means DefaultPath) and
// applies the environment overlay of the process (see LoadEnv); it is
// LoadEnv(path, os.Getenv).
func Load(path string) (*Config, []Warning, error) { return LoadEnv(path, os.Getenv) }

// LoadEnv reads the configuration file path ("" means the default path,
// found through getenv as DefaultPath finds it through os.Getenv) and
// then applies the environment overlay read through getenv (nil means
// os.Getenv).
//
// A missing file is an empty configuration, not an error; Path is then
// "". The file is decoded strictly: an unknown field, a key set twice or a
// value of the wrong type is an error naming the file, line and field
// path (every problem is reported; see Errors), and the error matches
// errcode.Invalid. Messages never hold a secret value. The providers'
// sections are kept as they are, for their drivers to decode (Section).
//
// The warnings say what is risky but usable: a file that holds a secret
// (an inline token secret or password, or a dsn with a password) and that
// group or others can read, a file others can write, or the old layout of
// the state section.
//
// # Environment overlay
//
// For CI, where there is no file, LoadEnv takes these variables over the
// file:
//
//   - OPENCTL_STATE_DSN sets State.DSN.
//   - OPENCTL_APPLY_CONCURRENCY sets Apply.Concurrency (a positive
//     integer).
//   - OPENCTL_PLUGIN_TIMEOUT sets Plugins.Timeout (a positive Go
//     duration).
//   - OPENCTL_HOME moves the default configuration file and the default
//     state directory.
//
// Providers read their own variables (OPENCTL_<NAME>_*) through their
// drivers. The state passphrase (OPENCTL_STATE_PASSPHRASE, _FILE) is read
// when a store needs it. Save never writes what the overlay set.
func LoadEnv(path string, getenv func(string) string) (*Config, []Warning, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if path == "" {
		p, err := defaultPath(getenv)
		if err != nil {
			return nil, nil, err
		}
		path = p
	}
	c, warnings, err := loadFile(path, getenv)
	if err != nil {
		return nil, warnings, err
	}
	c.meta.getenv = getenv
	if h := getenv(EnvHome); h != "" {
		c.meta.home = expandHome(h, getenv)
	} else if h, err := homeDir(getenv); err == nil {
		c.meta.home = filepath.Join(h, ".openctl")
	}
	if err := c.applyEnv(getenv); err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}

// loadFile reads and decodes the file path; a missing file is an empty
// configuration.
func loadFile(path string, getenv func(string) string) (*Config, []Warning, error) {
	c := &Config{meta: meta{source: path, pos: map[string]position{}}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil, nil
	}
	if err != nil {
		return nil, nil, inputError(errcode.InputError{File: path, Msg: "cannot read the configuration", Err: unwrapPathError(err)})
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, inputError(errcode.InputError{File: path, Msg: "cannot read the configuration", Err: unwrapPathError(err)})
	}
	if st.IsDir() {
		return nil, nil, inputError(errcode.InputError{File: path, Msg: "is a directory, not a configuration file"})
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, nil, inputError(errcode.InputError{File: path, Msg: "cannot read the configuration", Err: unwrapPathError(err)})
	}
	if len(data) > maxFileSize {
		return nil, nil, inputError(errcode.InputError{File: path, Msg: fmt.Sprintf("larger than %d MiB: not a configuration file", maxFileSize>>20)})
	}
	c.meta.getenv = getenv
	warnings, err := c.decode(path, data)
	if err != nil {
		return nil, nil, err
	}
	c.Path = path
	return c, append(warnings, modeWarnings(c, path, st.Mode().Perm())...), nil
}

// fileConfig is the top level of the file as decode reads it.
type fileConfig struct {
	Providers map[string]*yaml.Node `yaml:"providers"`
	State     fileState             `yaml:"state"`
	Apply     Apply                 `yaml:"apply"`
	Plugins   Plugins               `yaml:"plugins"`
}

// fileState is the state section, with the layout before DSNs (backend,
// dir) still accepted.
type fileState struct {
	DSN     secret.Secret `yaml:"dsn"`
	Backend string        `yaml:"backend"`
	Dir     string        `yaml:"dir" openctl:"path"`
}

// decode decodes data, the contents of file, into c and checks the
// values that have a fixed set of choices. It returns a warning when the
// state section has the layout before DSNs.
func (c *Config) decode(file string, data []byte) ([]Warning, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty file, or only comments
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, inputError(errcode.InputError{File: file, Line: extra.Line, Msg: "holds more than one YAML document; a configuration is one"})
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	var fc fileConfig
	d := &decoder{file: file, pos: c.meta.pos, expand: c.expander(file)}
	d.decode(root, reflect.ValueOf(&fc).Elem(), "")
	for _, name := range sortedKeys(fc.Providers) {
		n := fc.Providers[name]
		if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
			fc.Providers[name] = n
		}
		if n != nil && !isNull(n) && n.Kind != yaml.MappingNode {
			d.fail(n, joinPath("providers", name), "want a map of the provider's settings, got %s", describe(n))
		}
	}
	if len(d.errs) > 0 {
		return nil, joinErrors(d.errs)
	}
	if root.Kind == yaml.MappingNode {
		c.meta.doc = &doc // the document: its comments are Save's too
	}
	c.meta.sections = fc.Providers
	c.Apply = fc.Apply
	c.Plugins = fc.Plugins
	c.State.DSN = fc.State.DSN
	var warnings []Warning
	if fc.State.Backend != "" || fc.State.Dir != "" {
		var errs []*errcode.InputError
		switch fc.State.Backend {
		case "file":
			// As before DSNs: the file backend, whatever dsn says.
			c.State.DSN = secret.Secret{}
			if fc.State.Dir != "" {
				c.State.DSN = secret.New("file:" + fc.State.Dir)
			}
		case "":
			// As before DSNs: postgres when a dsn is set, else files.
			if fc.State.DSN.IsZero() && fc.State.Dir != "" {
				c.State.DSN = secret.New("file:" + fc.State.Dir)
			}
		case "postgres":
			if fc.State.DSN.IsZero() {
				errs = append(errs, c.errAt(file, "state.dsn", "required with backend postgres: the PostgreSQL DSN"))
			}
		default:
			errs = append(errs, c.errAt(file, "state.backend", fmt.Sprintf("want file or postgres, got %s", quote(fc.State.Backend))))
		}
		if err := joinErrors(errs); err != nil {
			return nil, err
		}
		warnings = append(warnings, Warning(file+": state.backend and state.dir are the old layout: write the store as one DSN, state.dsn: file:DIR or postgres://..."))
	}
	if t := c.Plugins.Timeout; t < 0 {
		return nil, c.errAt(file, "plugins.timeout", fmt.Sprintf("must not be negative, got %s (0 means the default)", t))
	}
	if n := c.Apply.Concurrency; n < 0 {
		return nil, c.errAt(file, "apply.concurrency", fmt.Sprintf("must not be negative, got %d (0 means the default, %d)", n, DefaultConcurrency))
	}
	if dsn := c.State.DSN.Reveal(); strings.HasPrefix(dsn, "file:") {
		// A file store's directory is a path like any other in the file.
		c.State.DSN = secret.New("file:" + c.expander(file)(strings.TrimPrefix(strings.TrimPrefix(dsn, "file:"), "//")))
	}
	return warnings, nil
}

// expander returns the function that expands file paths written in
// file: ~/ is the home directory, a relative path is relative to the
// file's directory.
func (c *Config) expander(file string) func(string) string {
	dir := filepath.Dir(file)
	return func(p string) string {
		if p == "" {
			return p
		}
		v := expandHome(p, c.meta.getenv)
		if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") {
			v = filepath.Join(dir, v)
		}
		return v
	}
}

// errAt returns an *errcode.InputError about field, placed where the file has it or,
// when the file does not have it, where it has the nearest enclosing
// field.
func (c *Config) errAt(file, field, msg string) *errcode.InputError {
	e := inputError(errcode.InputError{File: file, Field: field, Msg: msg})
	for p := field; p != ""; p = parentPath(p) {
		if pos, ok := c.meta.pos[p]; ok {
			e.Line, e.Column = pos.line, pos.column
			break
		}
	}
	return e
}

// parentPath drops the last element of a field path.
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "["); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// expandHome replaces a leading "~" or "~/" with the home directory; a path
// without one, or with no home directory known, is returned as it is.
func expandHome(p string, getenv func(string) string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !(runtime.GOOS == "windows" && strings.HasPrefix(p, `~\`)) {
		return p
	}
	home, err := homeDir(getenv)
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}

// homeDir returns $HOME as getenv sees it, else os.UserHomeDir.
func homeDir(getenv func(string) string) (string, error) {
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" {
		if h := getenv("HOME"); h != "" {
			return h, nil
		}
	}
	return os.UserHomeDir()
}

// modeWarnings warns about a file group or others can read while it holds
// secrets, or can write at all.
func modeWarnings(c *Config, path string, perm fs.FileMode) []Warning {
	if runtime.GOOS == "windows" || perm&0o077 == 0 {
		return nil
	}
	var out []Warning
	if held := c.secretsHeld(); len(held) > 0 && perm&0o044 != 0 {
		out = append(out, Warning(fmt.Sprintf("%s holds secrets (%s) and is readable by %s (mode %04o): chmod 600 %s",
			path, strings.Join(held, ", "), who(perm, 0o040, 0o004), perm, path)))
	}
	if perm&0o022 != 0 {
		out = append(out, Warning(fmt.Sprintf("%s is writable by %s (mode %04o), who could point openctl at another server: chmod 600 %s",
			path, who(perm, 0o020, 0o002), perm, path)))
	}
	return out
}

// who names the classes of users perm grants a permission to.
func who(perm, group, others fs.FileMode) string {
	switch {
	case perm&group != 0 && perm&others != 0:
		return "group and others"
	case perm&group != 0:
		return "group"
	default:
		return "others"
	}
}

// secretKey matches the keys of provider sections that hold a secret
// inline: tokenSecret, password, apiKey, ... (not tokenSecretFile).
var secretKey = regexp.MustCompile(`(?i)(secret|password|passphrase|apikey|token)$`)

// secretsHeld names the secrets c's file holds inline: the provider
// section keys that name one (tokenSecret, password) and "dsn" (a DSN
// with a password). Which provider fields are secrets only their drivers
// know; for this warning the key's name is enough.
func (c *Config) secretsHeld() []string {
	seen := map[string]bool{}
	var held []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.ScalarNode && v.Value != "" && !isNull(v) && secretKey.MatchString(k.Value) && !seen[k.Value] {
					seen[k.Value] = true
					held = append(held, k.Value)
				}
				walk(v)
			}
		}
		for _, x := range n.Content {
			if n.Kind != yaml.MappingNode {
				walk(x)
			}
		}
	}
	for _, name := range c.ProviderNames() {
		walk(c.meta.sections[name])
	}
	if dsnHasPassword(c.State.DSN.Reveal()) {
		held = append(held, "dsn")
	}
	return held
}

// dsnHasPassword reports whether a PostgreSQL DSN, in URL or key=value
// form, carries a password.
func dsnHasPassword(dsn string) bool {
	if dsn == "" {
		return false
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return true // cannot tell: assume it does
		}
		if _, ok := u.User.Password(); ok {
			return true
		}
		q := u.Query()
		return q.Has("password") || q.Has("sslpassword")
	}
	return strings.Contains(dsn, "password")
}

// unwrapPathError drops the *fs.PathError around err, whose path the
// *errcode.InputError names already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
