// Package files is an example openctl provider written outside openctl:
// it serves the API group files.example.com and keeps each File resource
// as a file in a directory. It shows everything a provider brings to a
// CLI built with package cli: its own API group, a configuration section
// (providers.files), an environment variable (OPENCTL_FILES_ROOT), a
// sandbox, a Lister, a Validator and an action ("openctl files cat file
// NAME").
//
//	providers:
//	  files:
//	    default-context: home
//	    contexts:
//	      home:
//	        root: ~/managed-files
package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// Group is the API group the provider serves.
const Group = "files.example.com"

// EnvRoot names the directory of a context "env" that becomes the
// default.
const EnvRoot = "OPENCTL_FILES_ROOT"

var fileKind = registry.Kind{
	Kind: "File", Plural: "files", ShortNames: []string{"file"}, Versions: []string{"v1"},
	Columns: []registry.Column{{Name: "SIZE", Field: "status.size"}, {Name: "MODE", Field: "status.mode"}, {Name: "SHA256", Field: "status.sha256", Wide: true}},
}

var catAction = registry.ActionSpec{Name: "cat", Kind: "File", Short: "Print a file's content"}

// Driver is the provider as a program compiles it in.
type Driver struct{}

var (
	_ registry.Driver        = Driver{}
	_ registry.EnvConfigurer = Driver{}
	_ registry.Sandboxer     = Driver{}
)

// Info describes the provider.
func (Driver) Info() registry.DriverInfo {
	return registry.DriverInfo{
		Name:           "files",
		Groups:         []string{Group},
		Kinds:          []registry.Kind{fileKind},
		Actions:        []registry.ActionSpec{catAction},
		ContextColumns: []string{"ROOT"},
		Env:            []registry.EnvVar{{Name: EnvRoot, Help: "the directory of a context \"env\" that becomes the default"}},
	}
}

// Config is the providers.files section.
type Config struct {
	DefaultContext string              `yaml:"default-context,omitempty"`
	ByName         map[string]*Context `yaml:"contexts,omitempty"`

	sec *config.Section
}

// Context is one directory files are kept in.
type Context struct {
	Root string `yaml:"root,omitempty" openctl:"path"`
}

// DecodeConfig decodes providers.files strictly.
func (Driver) DecodeConfig(sec *config.Section) (registry.DriverConfig, error) {
	c := &Config{sec: sec}
	if err := sec.Decode(c); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(c.ByName)) {
		if c.ByName[name].Root == "" {
			return nil, sec.Errorf(config.JoinPath("contexts", name)+".root", "required: the directory the files are kept in")
		}
	}
	if d := c.DefaultContext; d != "" && c.ByName[d] == nil {
		return nil, sec.Errorf(config.KeyDefaultContext, "%q is not a context", d)
	}
	return c, nil
}

// Contexts lists the contexts with their root directory.
func (c *Config) Contexts() []registry.ContextInfo {
	var out []registry.ContextInfo
	for _, name := range slices.Sorted(maps.Keys(c.ByName)) {
		out = append(out, registry.ContextInfo{Name: name, Current: name == c.current(), Columns: []string{c.ByName[name].Root}})
	}
	return out
}

func (c *Config) current() string {
	if c.DefaultContext == "" && len(c.ByName) == 1 {
		for n := range c.ByName {
			return n
		}
	}
	return c.DefaultContext
}

// WithContext makes name the default context.
func (c *Config) WithContext(name string) (registry.DriverConfig, error) {
	if c.ByName[name] == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("files: no context %q (contexts: %s)", name, strings.Join(slices.Sorted(maps.Keys(c.ByName)), ", ")))
	}
	out := *c
	out.DefaultContext = name
	return &out, nil
}

// ConfigFromEnv adds the context "env" when OPENCTL_FILES_ROOT is set.
func (Driver) ConfigFromEnv(cfg registry.DriverConfig, getenv func(string) string) (registry.DriverConfig, error) {
	root := getenv(EnvRoot)
	if root == "" {
		return cfg, nil
	}
	c := *cfg.(*Config)
	c.ByName = map[string]*Context{"env": {Root: root}}
	for k, v := range cfg.(*Config).ByName {
		if k != "env" {
			c.ByName[k] = v
		}
	}
	c.DefaultContext = "env"
	return &c, nil
}

// Sandbox keeps the files in a temporary directory.
func (Driver) Sandbox(context.Context, registry.SandboxOptions) (*registry.Sandbox, error) {
	dir, err := os.MkdirTemp("", "openctl-files-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("files: sandbox: %w", err)
	}
	return &registry.Sandbox{
		Config:      &Config{DefaultContext: "sandbox", ByName: map[string]*Context{"sandbox": {Root: dir}}},
		Description: "a temporary directory for files.example.com (" + dir + ")",
		Close:       func() error { return os.RemoveAll(dir) },
	}, nil
}

// Open returns the provider keeping files in the default context's root.
func (Driver) Open(_ context.Context, cfg registry.DriverConfig, _ registry.OpenOptions) (registry.Provider, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, errcode.New(errcode.Internal, fmt.Sprintf("files: %T is not a files configuration", cfg))
	}
	name := c.current()
	if name == "" {
		where := "no configuration"
		if c.sec != nil {
			where = c.sec.Describe()
		}
		return nil, errcode.New(errcode.Invalid, "files: no directory is configured ("+where+"): add providers.files.contexts.NAME.root to the configuration file, or set "+EnvRoot)
	}
	return &Provider{Root: c.ByName[name].Root}, nil
}

// Provider keeps File resources as files under Root. It is safe for
// concurrent use (each resource is its own file).
type Provider struct {
	Root string
}

var (
	_ registry.Provider  = (*Provider)(nil)
	_ registry.Lister    = (*Provider)(nil)
	_ registry.Validator = (*Provider)(nil)
	_ registry.Actioner  = (*Provider)(nil)
)

// Name returns "files".
func (p *Provider) Name() string { return "files" }

// Kinds returns File.
func (p *Provider) Kinds() []registry.Kind { return []registry.Kind{fileKind} }

func (p *Provider) path(name string) string { return filepath.Join(p.Root, name) }

// Get reads a file.
func (p *Provider) Get(_ context.Context, id manifest.ID) (*manifest.Resource, error) {
	data, err := os.ReadFile(p.path(id.Name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("files: %s: %w", id.Name, errcode.NotFound)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: "+id.Name, err)
	}
	st, err := os.Stat(p.path(id.Name))
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: "+id.Name, err)
	}
	sum := sha256.Sum256(data)
	mode := fmt.Sprintf("%04o", st.Mode().Perm())
	return &manifest.Resource{
		APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name},
		Spec:   map[string]any{"content": string(data), "mode": mode},
		Status: map[string]any{"path": p.path(id.Name), "size": int64(len(data)), "mode": mode, "sha256": hex.EncodeToString(sum[:])},
	}, nil
}

// List lists the files.
func (p *Provider) List(ctx context.Context, _ string) ([]*manifest.Resource, error) {
	entries, err := os.ReadDir(p.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: list", err)
	}
	var out []*manifest.Resource
	for _, e := range entries {
		if e.IsDir() || manifest.ValidateName(e.Name()) != nil {
			continue
		}
		r, err := p.Get(ctx, manifest.ID{APIVersion: Group + "/v1", Kind: "File", Name: e.Name()})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// spec is a File's spec.
type spec struct {
	content string
	mode    os.FileMode
}

func decode(r *manifest.Resource) (spec, error) {
	s := spec{mode: 0o644}
	for k, v := range r.Spec {
		switch k {
		case "content":
			str, ok := v.(string)
			if !ok {
				return s, errcode.New(errcode.Invalid, fmt.Sprintf("files: %s: spec.content: want a string, got %s", r.Metadata.Name, manifest.TypeName(v)))
			}
			s.content = str
		case "mode":
			str, _ := v.(string)
			m, err := strconv.ParseUint(str, 8, 32)
			if err != nil || m > 0o777 {
				return s, errcode.New(errcode.Invalid, fmt.Sprintf("files: %s: spec.mode: want an octal permission such as \"0644\"", r.Metadata.Name))
			}
			s.mode = os.FileMode(m)
		default:
			return s, errcode.New(errcode.Invalid, fmt.Sprintf("files: %s: spec.%s: unknown field (known: content, mode)", r.Metadata.Name, k))
		}
	}
	return s, nil
}

// Validate checks the spec.
func (p *Provider) Validate(_ context.Context, r *manifest.Resource) error {
	_, err := decode(r)
	return err
}

// Apply writes the file (through a temporary file renamed into place).
func (p *Provider) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	s, err := decode(r)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.Root, 0o755); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: "+r.Metadata.Name, err)
	}
	tmp := p.path("." + r.Metadata.Name + ".tmp")
	if err := os.WriteFile(tmp, []byte(s.content), s.mode); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: "+r.Metadata.Name, err)
	}
	if err := os.Chmod(tmp, s.mode); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: "+r.Metadata.Name, err)
	}
	if err := os.Rename(tmp, p.path(r.Metadata.Name)); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: "+r.Metadata.Name, err)
	}
	return p.Get(ctx, r.ID())
}

// Delete removes the file; a missing file is not an error.
func (p *Provider) Delete(_ context.Context, id manifest.ID) error {
	if err := os.Remove(p.path(id.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errcode.Wrap(errcode.Internal, "files: "+id.Name, err)
	}
	return nil
}

// Actions lists "cat".
func (p *Provider) Actions() []registry.ActionSpec { return []registry.ActionSpec{catAction} }

// Do runs "cat": the file's content goes to req.Out.
func (p *Provider) Do(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	r, err := p.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprint(req.Out, r.Spec["content"]); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "files: cat", err)
	}
	return &registry.ActionResult{Resource: r}, nil
}
