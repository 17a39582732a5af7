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
	"runtime"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/state"
)

// The environment variables that say where the configuration is.
const (
	// EnvConfig names the configuration file.
	EnvConfig = "OPENCTL_CONFIG"
	// EnvHome moves openctl's home directory (default ~/.openctl): the
	// configuration file is config.yaml in it, the state directory state.
	EnvHome = state.EnvHome
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
		return "", &Error{Msg: "no home directory to find the configuration in (set " + EnvConfig + " or " + EnvHome + ")", Err: err}
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
// errcode.Invalid. Messages never hold a secret value. In file paths
// (tokenSecretFile, caFile, state.dir) a leading ~/ is the home directory
// and a relative path is relative to the file's directory.
//
// The warnings say what is risky but usable: a file that holds a secret
// (tokenSecret, or a dsn with a password) and that group or others can
// read, or a file others can write.
//
// # Environment overlay
//
// For CI, where there is no file, LoadEnv takes these variables over the
// file:
//
//   - OPENCTL_PROXMOX_URL, with OPENCTL_PROXMOX_TOKEN_ID and
//     OPENCTL_PROXMOX_TOKEN_SECRET (or OPENCTL_PROXMOX_TOKEN_SECRET_FILE),
//     and optionally OPENCTL_PROXMOX_FINGERPRINT and OPENCTL_PROXMOX_NODE,
//     define the Proxmox context "env" (and credentials "env"), replacing a
//     context of that name in the file, and make it the default context.
//     A URL without a token id or secret, or a token without a URL, is an
//     error naming the missing variables.
//   - OPENCTL_STATE_DSN selects the postgres state backend with that DSN.
//   - OPENCTL_APPLY_CONCURRENCY sets Apply.Concurrency (a positive
//     integer).
//   - OPENCTL_HOME moves the default configuration file and the default
//     state directory.
//
// The state passphrase (OPENCTL_STATE_PASSPHRASE, _FILE) is read when a
// store needs it; see OpenStore. Save never writes what the overlay set.
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
	c.meta.home = getenv(EnvHome)
	if c.meta.home != "" {
		c.meta.home = expandHome(c.meta.home, getenv)
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
		return nil, nil, &Error{File: path, Msg: "cannot read the configuration", Err: unwrapPathError(err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, &Error{File: path, Msg: "cannot read the configuration", Err: unwrapPathError(err)}
	}
	if st.IsDir() {
		return nil, nil, &Error{File: path, Msg: "is a directory, not a configuration file"}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, nil, &Error{File: path, Msg: "cannot read the configuration", Err: unwrapPathError(err)}
	}
	if len(data) > maxFileSize {
		return nil, nil, &Error{File: path, Msg: fmt.Sprintf("larger than %d MiB: not a configuration file", maxFileSize>>20)}
	}
	if err := c.decode(path, data); err != nil {
		return nil, nil, err
	}
	c.Path = path
	c.expandPaths(filepath.Dir(path), getenv)
	return c, modeWarnings(c, path, st.Mode().Perm()), nil
}

// decode decodes data, the contents of file, into c and checks the
// values that have a fixed set of choices.
func (c *Config) decode(file string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file, or only comments
		}
		return syntaxError(file, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return &Error{File: file, Line: extra.Line, Msg: "holds more than one YAML document; a configuration is one"}
	case !errors.Is(err, io.EOF):
		return syntaxError(file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	d := &decoder{file: file, pos: c.meta.pos}
	d.decode(root, reflect.ValueOf(c).Elem(), "")
	if len(d.errs) == 0 {
		d.errs = c.check(file)
	}
	return joinErrors(d.errs)
}

// check returns the problems with the values that have a fixed set of
// choices.
func (c *Config) check(file string) []*Error {
	var errs []*Error
	if b := c.State.Backend; b != "" && b != BackendFile && b != BackendPostgres {
		errs = append(errs, c.errAt(file, "state.backend", fmt.Sprintf("want %s or %s, got %s", BackendFile, BackendPostgres, quote(b))))
	}
	if n := c.Apply.Concurrency; n < 0 {
		errs = append(errs, c.errAt(file, "apply.concurrency", fmt.Sprintf("must not be negative, got %d (0 means the default, %d)", n, DefaultConcurrency)))
	}
	return errs
}

// errAt returns an *Error about field, placed where the file has it or,
// when the file does not have it, where it has the nearest enclosing
// field.
func (c *Config) errAt(file, field, msg string) *Error {
	e := &Error{File: file, Field: field, Msg: msg}
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

// expandPaths expands ~/ and makes relative paths relative to dir in the
// file-path fields, remembering what the file said for Save.
func (c *Config) expandPaths(dir string, getenv func(string) string) {
	expand := func(field string, p *string) {
		if *p == "" {
			return
		}
		v := expandHome(*p, getenv)
		if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") {
			v = filepath.Join(dir, v)
		}
		if v != *p {
			if c.meta.raw == nil {
				c.meta.raw = map[string]rawPath{}
			}
			c.meta.raw[field] = rawPath{file: *p, expanded: v}
			*p = v
		}
	}
	for pname, p := range c.Providers {
		if p == nil {
			continue
		}
		base := joinPath("providers", pname)
		for n, x := range p.Contexts {
			expand(joinPath(joinPath(base, "contexts"), n)+".caFile", &x.CAFile)
		}
		for n, x := range p.Credentials {
			expand(joinPath(joinPath(base, "credentials"), n)+".tokenSecretFile", &x.TokenSecretFile)
		}
	}
	expand("state.dir", &c.State.Dir)
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

// secretsHeld names the kinds of secret c holds inline: "tokenSecret"
// and "dsn" (a DSN with a password).
func (c *Config) secretsHeld() []string {
	var held []string
	for _, p := range c.Providers {
		if p == nil {
			continue
		}
		found := false
		for _, cr := range p.Credentials {
			if cr != nil && !cr.TokenSecret.IsZero() {
				found = true
			}
		}
		if found {
			held = append(held, "tokenSecret")
			break
		}
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
// *Error names already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
