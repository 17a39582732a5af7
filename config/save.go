package config

import (
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// The file types Save encodes: the configuration types with secrets as
// plain strings, because secret.Secret redacts itself in YAML.
type (
	fileConfig struct {
		Providers map[string]*fileProvider `yaml:"providers,omitempty"`
		State     fileState                `yaml:"state,omitempty"`
		Apply     Apply                    `yaml:"apply,omitempty"`
	}
	fileProvider struct {
		DefaultContext string                      `yaml:"default-context,omitempty"`
		Contexts       map[string]*Context         `yaml:"contexts,omitempty"`
		Credentials    map[string]*fileCredentials `yaml:"credentials,omitempty"`
		Defaults       map[string]string           `yaml:"defaults,omitempty"`
	}
	fileCredentials struct {
		TokenID         string `yaml:"tokenId,omitempty"`
		TokenSecret     string `yaml:"tokenSecret,omitempty"`
		TokenSecretFile string `yaml:"tokenSecretFile,omitempty"`
	}
	fileState struct {
		Backend string `yaml:"backend,omitempty"`
		Dir     string `yaml:"dir,omitempty"`
		DSN     string `yaml:"dsn,omitempty"`
	}
)

// Save writes the configuration to Path, or when Path is "" to the file
// Load looked for (or DefaultPath), and sets Path. The file is replaced
// atomically (a temporary file in the same directory, synced and renamed
// over it) with mode 0600; a missing directory is created with mode 0700.
// A symbolic link is followed, so the file it points to is replaced.
//
// Secrets are written in clear, as the user wrote them; file paths Load
// expanded are written as the file had them (~/...). What the environment
// overlay set is not written: the file keeps its own values there. The
// comments and layout of an existing file are not kept. Save refuses a
// copy made by Redacted.
func (c *Config) Save() error {
	if c.meta.redacted {
		return &Error{Msg: "refusing to save a Redacted copy of the configuration: its secrets are gone"}
	}
	path := c.Path
	if path == "" {
		path = c.meta.source
	}
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return err
		}
		path = p
	}
	data, err := yaml.Marshal(c.fileForm())
	if err != nil {
		return &Error{File: path, Msg: "cannot encode the configuration", Err: err}
	}
	if err := writeFileAtomic(path, data); err != nil {
		return &Error{File: path, Msg: "cannot save the configuration", Err: err}
	}
	c.Path = path
	return nil
}

// fileForm returns what Save writes: c without the overlay, secrets
// revealed, file paths as the file wrote them.
func (c *Config) fileForm() *fileConfig {
	providers, st, ap := c.meta.env.undo(c)
	orig := func(field, v string) string {
		if r, ok := c.meta.raw[field]; ok && r.expanded == v {
			return r.file
		}
		return v
	}
	out := &fileConfig{
		State: fileState{Backend: st.Backend, Dir: orig("state.dir", st.Dir), DSN: st.DSN.Reveal()},
		Apply: ap,
	}
	if providers != nil {
		out.Providers = make(map[string]*fileProvider, len(providers))
	}
	for pname, p := range providers {
		if p == nil {
			out.Providers[pname] = nil
			continue
		}
		base := joinPath("providers", pname)
		fp := &fileProvider{DefaultContext: p.DefaultContext, Defaults: p.Defaults}
		if p.Contexts != nil {
			fp.Contexts = make(map[string]*Context, len(p.Contexts))
		}
		for n, x := range p.Contexts {
			x = clonePtr(x)
			if x != nil {
				x.CAFile = orig(joinPath(joinPath(base, "contexts"), n)+".caFile", x.CAFile)
			}
			fp.Contexts[n] = x
		}
		if p.Credentials != nil {
			fp.Credentials = make(map[string]*fileCredentials, len(p.Credentials))
		}
		for n, x := range p.Credentials {
			if x == nil {
				fp.Credentials[n] = nil
				continue
			}
			fp.Credentials[n] = &fileCredentials{
				TokenID:         x.TokenID,
				TokenSecret:     x.TokenSecret.Reveal(),
				TokenSecretFile: orig(joinPath(joinPath(base, "credentials"), n)+".tokenSecretFile", x.TokenSecretFile),
			}
		}
		out.Providers[pname] = fp
	}
	return out
}

// writeFileAtomic replaces path with data, mode 0600, through a synced
// temporary file renamed over it, creating the directory 0700 if needed.
func writeFileAtomic(path string, data []byte) (err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; a directory that cannot be synced (some
	// file systems) leaves the file written all the same.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
