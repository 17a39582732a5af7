package proxmox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
)

// The environment variables the Driver reads (registry.EnvConfigurer):
// OPENCTL_PROXMOX_URL with OPENCTL_PROXMOX_TOKEN_ID and
// OPENCTL_PROXMOX_TOKEN_SECRET (or OPENCTL_PROXMOX_TOKEN_SECRET_FILE),
// and optionally OPENCTL_PROXMOX_FINGERPRINT and OPENCTL_PROXMOX_NODE,
// define a context named "env" (with credentials "env") that replaces a
// context of that name in the file and becomes the default.
const (
	EnvURL             = "OPENCTL_PROXMOX_URL"
	EnvTokenID         = "OPENCTL_PROXMOX_TOKEN_ID"
	EnvTokenSecret     = "OPENCTL_PROXMOX_TOKEN_SECRET"
	EnvTokenSecretFile = "OPENCTL_PROXMOX_TOKEN_SECRET_FILE"
	EnvFingerprint     = "OPENCTL_PROXMOX_FINGERPRINT"
	EnvNode            = "OPENCTL_PROXMOX_NODE"
)

// Name is the provider's name: it serves the API group proxmox.openctl.io
// and reads the configuration section providers.proxmox.
const Name = "proxmox"

// EnvContext is the name of the context (and credentials) the
// environment variables define.
const EnvContext = "env"

// Driver is the Proxmox VE provider as a program compiles it in
// (registry.Driver): cli.Main(proxmox.Driver{}) gives a CLI with the
// VirtualMachine, Template and Node kinds. It decodes the
// providers.proxmox section of the configuration file,
//
//	providers:
//	  proxmox:
//	    default-context: lab
//	    contexts:
//	      lab:
//	        endpoint: https://pve.lab:8006
//	        node: pve1                 # default node for VMs that name none
//	        credentials: lab-token
//	        fingerprint: "AB:CD:..."   # or caFile: /path, or insecureSkipVerify: true
//	    credentials:
//	      lab-token:
//	        tokenId: root@pam!openctl
//	        tokenSecretFile: ~/.openctl/secrets/lab.token   # or tokenSecret: "..."
//	    defaults:
//	      storage: local-lvm
//	      bridge: vmbr0
//
// reads the OPENCTL_PROXMOX_* variables (EnvURL and the others), and its
// sandbox is the simulator of package proxmoxtest. A program that builds
// its Config in code needs no Driver: New(cfg) is enough.
type Driver struct {
	// SandboxGuests, when set, gives the sandbox's VMs what runs inside
	// them (proxmoxtest.WithGuests) — package sandbox's hosts, which
	// answer SSH — and a release function called when the sandbox
	// closes; nil: the VMs run nothing.
	SandboxGuests func(ctx context.Context, opts registry.SandboxOptions) (guests proxmoxtest.Guests, release func() error, err error)
}

var (
	_ registry.Driver        = Driver{}
	_ registry.EnvConfigurer = Driver{}
	_ registry.Sandboxer     = Driver{}
)

// Info describes the provider: the group proxmox.openctl.io, its kinds
// and actions.
func (Driver) Info() registry.DriverInfo {
	return registry.DriverInfo{
		Name:           Name,
		Kinds:          (&Provider{}).Kinds(),
		Actions:        (&Provider{}).Actions(),
		ContextColumns: []string{"ENDPOINT", "NODE", "CREDENTIALS"},
		Env: []registry.EnvVar{
			{Name: EnvURL, Help: "the Proxmox VE API URL (https://pve.example.com:8006); defines the context \"env\" and makes it the default"},
			{Name: EnvTokenID, Help: "the API token's id, user@realm!name"},
			{Name: EnvTokenSecret, Help: "the API token's secret"},
			{Name: EnvTokenSecretFile, Help: "a file holding the API token's secret, instead of " + EnvTokenSecret},
			{Name: EnvFingerprint, Help: "the SHA-256 fingerprint of the server's certificate, to pin it"},
			{Name: EnvNode, Help: "the default node for VMs that name none"},
		},
	}
}

// fileConfig is the providers.proxmox section, and the registry
// DriverConfig the Driver returns. It marshals to YAML in the file's
// shape, secrets redacted.
type fileConfig struct {
	DefaultContext string                      `yaml:"default-context,omitempty"`
	ByName         map[string]*fileContext     `yaml:"contexts,omitempty"`
	Credentials    map[string]*fileCredentials `yaml:"credentials,omitempty"`
	Defaults       Defaults                    `yaml:"defaults,omitempty"`

	sec *config.Section // where it was decoded from; nil for the sandbox
	env bool            // the "env" context came from the environment
}

type fileContext struct {
	Endpoint           string `yaml:"endpoint,omitempty"`
	Node               string `yaml:"node,omitempty"`
	Credentials        string `yaml:"credentials,omitempty"`
	Fingerprint        string `yaml:"fingerprint,omitempty"`
	CAFile             string `yaml:"caFile,omitempty" openctl:"path"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify,omitempty"`
}

type fileCredentials struct {
	TokenID         string        `yaml:"tokenId,omitempty"`
	TokenSecret     secret.Secret `yaml:"tokenSecret,omitempty"`
	TokenSecretFile string        `yaml:"tokenSecretFile,omitempty" openctl:"path"`
}

// DecodeConfig decodes the providers.proxmox section strictly and checks
// that every context names defined credentials and that the default
// context exists, naming the file, line and field of each problem.
func (Driver) DecodeConfig(sec *config.Section) (registry.DriverConfig, error) {
	fc := &fileConfig{sec: sec}
	if err := sec.Decode(fc); err != nil {
		return nil, err
	}
	names := sortedKeys(fc.ByName)
	creds := sortedKeys(fc.Credentials)
	var errs []error
	for _, name := range names {
		x := fc.ByName[name]
		field := config.JoinPath("contexts", name)
		switch _, ok := fc.Credentials[x.Credentials]; {
		case x.Credentials == "":
			errs = append(errs, sec.Errorf(field+".credentials", "required: the name of an entry of %s.credentials (defined: %s)", sec.Path(), orNone(creds)))
		case !ok:
			errs = append(errs, sec.Errorf(field+".credentials", "%q is not defined under %s.credentials (defined: %s)", x.Credentials, sec.Path(), orNone(creds)))
		}
	}
	if d := fc.DefaultContext; d != "" && fc.ByName[d] == nil {
		errs = append(errs, sec.Errorf(config.KeyDefaultContext, "%q is not a context (contexts: %s)", d, orNone(names)))
	}
	if len(errs) > 0 {
		return nil, joinInvalid(errs)
	}
	return fc, nil
}

// Contexts lists the contexts with their endpoint, node and credentials.
func (c *fileConfig) Contexts() []registry.ContextInfo {
	cur := c.current()
	var out []registry.ContextInfo
	for _, name := range sortedKeys(c.ByName) {
		x := c.ByName[name]
		out = append(out, registry.ContextInfo{Name: name, Current: name == cur, Columns: []string{x.Endpoint, orNoneS(x.Node), orNoneS(x.Credentials)}})
	}
	return out
}

// current is the default context, or the only one.
func (c *fileConfig) current() string {
	if c.DefaultContext != "" || len(c.ByName) != 1 {
		return c.DefaultContext
	}
	for n := range c.ByName {
		return n
	}
	return ""
}

// WithContext makes name the default context.
func (c *fileConfig) WithContext(name string) (registry.DriverConfig, error) {
	if c.ByName[name] == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: no Proxmox context %q (contexts: %s)", name, orNone(sortedKeys(c.ByName))))
	}
	out := c.clone()
	out.DefaultContext = name
	return out, nil
}

// clone copies c deeply enough that changing its maps leaves c alone.
func (c *fileConfig) clone() *fileConfig {
	out := *c
	out.ByName = maps.Clone(c.ByName)
	out.Credentials = maps.Clone(c.Credentials)
	return &out
}

// ConfigFromEnv lays the OPENCTL_PROXMOX_* variables over cfg.
func (Driver) ConfigFromEnv(cfg registry.DriverConfig, getenv func(string) string) (registry.DriverConfig, error) {
	fc, err := asFileConfig(cfg)
	if err != nil {
		return nil, err
	}
	set := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if getenv(n) != "" {
				out = append(out, n)
			}
		}
		return out
	}
	url := getenv(EnvURL)
	if url == "" {
		if others := set(EnvTokenID, EnvTokenSecret, EnvTokenSecretFile, EnvFingerprint, EnvNode); len(others) > 0 {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: %s %s set but %s is not: set it to the Proxmox VE API URL (https://pve.example.com:8006), or unset %s",
				strings.Join(others, ", "), isAre(len(others)), EnvURL, strings.Join(others, ", ")))
		}
		return cfg, nil
	}
	var missing []string
	if getenv(EnvTokenID) == "" {
		missing = append(missing, EnvTokenID)
	}
	tokenSecret, tokenFile := getenv(EnvTokenSecret), getenv(EnvTokenSecretFile)
	switch {
	case tokenSecret == "" && tokenFile == "":
		missing = append(missing, EnvTokenSecret+" (or "+EnvTokenSecretFile+")")
	case tokenSecret != "" && tokenFile != "":
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: both %s and %s are set: set only one", EnvTokenSecret, EnvTokenSecretFile))
	}
	if len(missing) > 0 {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("proxmox: %s is set but %s %s not: set %s to the API token (user@realm!name and its secret)",
			EnvURL, strings.Join(missing, " and "), isAre(len(missing)), pronoun(len(missing))))
	}
	out := fc.clone()
	if out.ByName == nil {
		out.ByName = map[string]*fileContext{}
	}
	if out.Credentials == nil {
		out.Credentials = map[string]*fileCredentials{}
	}
	out.ByName[EnvContext] = &fileContext{Endpoint: url, Node: getenv(EnvNode), Credentials: EnvContext, Fingerprint: getenv(EnvFingerprint)}
	out.Credentials[EnvContext] = &fileCredentials{TokenID: getenv(EnvTokenID), TokenSecret: secret.New(tokenSecret), TokenSecretFile: tokenFile}
	out.DefaultContext = EnvContext
	out.env = true
	return out, nil
}

// Open builds the Provider. A configuration without contexts is an
// errcode.Invalid error that says how to configure Proxmox VE.
func (Driver) Open(_ context.Context, cfg registry.DriverConfig, opts registry.OpenOptions) (registry.Provider, error) {
	fc, err := asFileConfig(cfg)
	if err != nil {
		return nil, err
	}
	if len(fc.ByName) == 0 {
		where := "no configuration file"
		if fc.sec != nil {
			where = fc.sec.Describe()
		}
		return nil, errcode.New(errcode.Invalid, "proxmox: no Proxmox VE endpoint is configured ("+where+"): "+
			"add providers.proxmox with a context and its credentials to the configuration file, "+
			"or set "+EnvURL+", "+EnvTokenID+" and "+EnvTokenSecret+" (and "+EnvFingerprint+"), "+
			"or try the built-in simulator with --sandbox")
	}
	pc := Config{Contexts: make(map[string]Context, len(fc.ByName)), DefaultContext: fc.DefaultContext, Logger: opts.Logger}
	for name, x := range fc.ByName {
		c := Context{Endpoint: x.Endpoint, Node: x.Node, Fingerprint: x.Fingerprint, CAFile: x.CAFile, InsecureSkipVerify: x.InsecureSkipVerify, Defaults: fc.Defaults}
		if cr := fc.Credentials[x.Credentials]; cr != nil {
			c.TokenID, c.TokenSecret, c.TokenSecretFile = cr.TokenID, cr.TokenSecret, cr.TokenSecretFile
		}
		pc.Contexts[name] = c
	}
	if err := pc.Validate(); err != nil {
		// Name the file, unless the context came from the environment.
		if fc.sec != nil && fc.sec.File() != "" && !fc.env {
			return nil, fmt.Errorf("%s: %w", fc.sec.File(), err)
		}
		return nil, err
	}
	return New(pc)
}

// Sandbox starts the Proxmox VE simulator (proxmoxtest) with the
// sandbox layout — nodes pve1..pve3, shared storage "ceph" holding the
// template "ubuntu-24.04-cloud" — on a free loopback port, and returns a
// configuration with the context "sandbox" pointing at it, its
// certificate pinned.
func (d Driver) Sandbox(ctx context.Context, opts registry.SandboxOptions) (*registry.Sandbox, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	const nodes = 3
	simOpts := append(proxmoxtest.SandboxLayout(nodes, proxmoxtest.DefaultSharedStorage), proxmoxtest.WithLogger(log))
	release := func() error { return nil }
	if d.SandboxGuests != nil {
		guests, rel, err := d.SandboxGuests(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("proxmox: sandbox: %w", err)
		}
		simOpts, release = append(simOpts, proxmoxtest.WithGuests(guests)), rel
	}
	srv, err := proxmoxtest.New(simOpts...)
	if err != nil {
		_ = release()
		return nil, fmt.Errorf("proxmox: sandbox: %w", err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		_ = release()
		return nil, fmt.Errorf("proxmox: sandbox: %w", err)
	}
	id, tok := srv.Token()
	fc := &fileConfig{
		DefaultContext: "sandbox",
		ByName:         map[string]*fileContext{"sandbox": {Endpoint: srv.URL(), Credentials: "sandbox", Fingerprint: srv.Fingerprint()}},
		Credentials:    map[string]*fileCredentials{"sandbox": {TokenID: id, TokenSecret: secret.New(tok)}},
	}
	return &registry.Sandbox{
		Config:      fc,
		Description: fmt.Sprintf("a simulated Proxmox VE (nodes pve1..pve%d) at %s", nodes, srv.URL()),
		Close:       func() error { srv.Close(); return release() },
	}, nil
}

func asFileConfig(cfg registry.DriverConfig) (*fileConfig, error) {
	fc, ok := cfg.(*fileConfig)
	if !ok || fc == nil {
		return nil, errcode.New(errcode.Internal, fmt.Sprintf("proxmox: %T is not a configuration of the proxmox driver", cfg))
	}
	return fc, nil
}

// joinInvalid joins config errors (each already an errcode.Invalid).
func joinInvalid(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func orNoneS(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
