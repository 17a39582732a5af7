package k3s

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/addrmap"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
)

// Driver is the K3s provider as a program compiles it in
// (registry.Driver). It decodes the providers.k3s section of the
// configuration file, every key optional:
//
//	providers:
//	  k3s:
//	    binaryDir: ~/.openctl/cache/k3s     # k3s releases: <dir>/<version>/k3s, sha256sum-<arch>.txt
//	    releaseURL: https://github.com/k3s-io/k3s/releases/download
//	    offline: true                       # never download: binaryDir must hold the release
//	    readyTimeout: 10m                   # how long a node may take to be ready
//	    kubeconfigDir: ~/.openctl/kubeconfigs
//	    kubeconfig: ~/.kube/config          # what kubeconfig.merge merges into
//	    ssh:
//	      port: 22                          # the nodes' SSH port, where a manifest names none
//	      identityFile: ~/.ssh/ci_key       # log in to every node with this key alone (manifests' privateKeyPath unused)
//	    addressMap: 127.80.0.0/16           # move manifests' literal IPv4 addresses into this prefix (a sandbox's network)
//	    agent:                              # openctl's node agent, on every node
//	      binaryDir: ~/.openctl/cache/agent # openctl-agent-linux-<arch>: `make cross` writes them to bin/
//	      port: 9443
//	      releaseURL: https://mirror.lan/k3s # where agents download upgrades (default: releaseURL)
//	      enabled: true                     # false: nodes get no agent (day-2 actions refused)
//
// The defaults are under openctl's home directory ($OPENCTL_HOME, else
// ~/.openctl). The provider has no contexts: where each node is comes
// from the manifests.
//
// Under `openctl --sandbox` the provider manages the sandbox's simulated
// hosts, which SandboxHosts starts (package sandbox provides them); without
// it, --sandbox refuses K3s manifests.
type Driver struct {
	// SandboxHosts starts the simulated hosts for `--sandbox` and says
	// how the provider reaches them; nil: the provider has no sandbox.
	SandboxHosts func(ctx context.Context, opts registry.SandboxOptions) (*SandboxHosts, error)
}

// SandboxHosts is what a sandbox gives the K3s provider: where its k3s
// releases and agent binaries are, how its hosts are reached, and where
// the provider's files go (never the user's own kubeconfig).
type SandboxHosts struct {
	// Dir receives the provider's files: binaries, kubeconfigs, the
	// kubeconfig merged into.
	Dir string
	// ReleaseURL serves k3s releases as the release page lays them out.
	ReleaseURL string
	// AgentBinaryDir holds openctl-agent-linux-<arch>.
	AgentBinaryDir string
	// SSHPort is the hosts' SSH port; Identity the key they accept.
	SSHPort  int
	Identity ssh.Signer
	// AddressMap moves manifests' literal addresses onto the sandbox's
	// (Config.AddressMap).
	AddressMap func(netip.Addr) netip.Addr
	// Description says what runs, for the CLI's notice.
	Description string
	// Close stops the hosts.
	Close func() error
}

var _ registry.Sandboxer = Driver{}

var _ registry.Driver = Driver{}

// Info describes the provider: the group k3s.openctl.io and its kinds.
func (Driver) Info() registry.DriverInfo {
	return registry.DriverInfo{Name: Name, Kinds: (&Provider{}).Kinds(), Actions: (&Provider{}).Actions()}
}

// fileConfig is the providers.k3s section, and the DriverConfig the
// Driver returns.
type fileConfig struct {
	BinaryDir     string `yaml:"binaryDir,omitempty" openctl:"path"`
	ReleaseURL    string `yaml:"releaseURL,omitempty"`
	Offline       bool   `yaml:"offline,omitempty"`
	ReadyTimeout  string `yaml:"readyTimeout,omitempty"`
	KubeconfigDir string `yaml:"kubeconfigDir,omitempty" openctl:"path"`
	Kubeconfig    string `yaml:"kubeconfig,omitempty" openctl:"path"`
	Agent         struct {
		BinaryDir  string `yaml:"binaryDir,omitempty" openctl:"path"`
		Port       int    `yaml:"port,omitempty"`
		ReleaseURL string `yaml:"releaseURL,omitempty"`
		Enabled    *bool  `yaml:"enabled,omitempty"`
	} `yaml:"agent,omitempty"`
	SSH struct {
		Port         int    `yaml:"port,omitempty"`
		IdentityFile string `yaml:"identityFile,omitempty" openctl:"path"`
	} `yaml:"ssh,omitempty"`
	AddressMap string `yaml:"addressMap,omitempty"`

	readyTimeout time.Duration
	identity     ssh.Signer
	addressMap   func(netip.Addr) netip.Addr
	// sandbox is set on the configuration Driver.Sandbox returns.
	sandbox *SandboxHosts
}

// DecodeConfig decodes the providers.k3s section strictly and fills in
// the defaults under openctl's home directory.
func (Driver) DecodeConfig(sec *config.Section) (registry.DriverConfig, error) {
	fc := &fileConfig{}
	if err := sec.Decode(fc); err != nil {
		return nil, err
	}
	if fc.ReadyTimeout != "" {
		d, err := time.ParseDuration(fc.ReadyTimeout)
		if err != nil || d <= 0 {
			return nil, sec.Errorf("readyTimeout", "want a positive duration like 5m")
		}
		fc.readyTimeout = d
	}
	if p := fc.Agent.Port; p < 0 || p > 65535 {
		return nil, sec.Errorf("agent.port", "want a port number (1-65535), got %d", p)
	}
	if p := fc.SSH.Port; p < 0 || p > 65535 {
		return nil, sec.Errorf("ssh.port", "want a port number (1-65535), got %d", p)
	}
	if f := fc.SSH.IdentityFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, sec.Errorf("ssh.identityFile", "%v", err)
		}
		if fc.identity, err = ssh.ParsePrivateKey(b); err != nil {
			return nil, sec.Errorf("ssh.identityFile", "%s: %v (a passphrase-protected key goes through the SSH agent instead)", f, err)
		}
	}
	if m := fc.AddressMap; m != "" {
		p, err := netip.ParsePrefix(m)
		if err != nil || !p.Addr().Is4() || p != p.Masked() {
			return nil, sec.Errorf("addressMap", "want an IPv4 prefix like 127.80.0.0/16, got %q", m)
		}
		fc.addressMap = addrmap.Into(p)
	}
	if home := sec.Home(); home != "" {
		if fc.BinaryDir == "" {
			fc.BinaryDir = filepath.Join(home, "cache", "k3s")
		}
		if fc.KubeconfigDir == "" {
			fc.KubeconfigDir = filepath.Join(home, "kubeconfigs")
		}
		if fc.Agent.BinaryDir == "" {
			fc.Agent.BinaryDir = filepath.Join(home, "cache", "agent")
		}
	}
	if home, err := os.UserHomeDir(); err == nil && fc.Kubeconfig == "" {
		fc.Kubeconfig = filepath.Join(home, ".kube", "config")
	}
	return fc, nil
}

// Contexts returns none: the provider has no endpoints of its own.
func (c *fileConfig) Contexts() []registry.ContextInfo { return nil }

// WithContext refuses every name: the provider has no contexts.
func (c *fileConfig) WithContext(name string) (registry.DriverConfig, error) {
	return nil, errcode.New(errcode.Invalid, fmt.Sprintf("k3s: the k3s provider has no contexts (asked for %q): its nodes are named in the manifests", name))
}

// Open returns the provider.
func (Driver) Open(_ context.Context, cfg registry.DriverConfig, opts registry.OpenOptions) (registry.Provider, error) {
	fc, ok := cfg.(*fileConfig)
	if !ok || fc == nil {
		return nil, errcode.New(errcode.Internal, fmt.Sprintf("k3s: %T is not a configuration of the k3s driver", cfg))
	}
	if fc.BinaryDir == "" {
		return nil, errcode.New(errcode.Invalid, "k3s: no directory for k3s binaries: set providers.k3s.binaryDir, or OPENCTL_HOME")
	}
	var ag *AgentConfig
	if fc.Agent.Enabled == nil || *fc.Agent.Enabled {
		if fc.Agent.BinaryDir == "" {
			return nil, errcode.New(errcode.Invalid, "k3s: no directory for the node agent's binaries: set providers.k3s.agent.binaryDir, or OPENCTL_HOME")
		}
		ag = &AgentConfig{BinaryDir: fc.Agent.BinaryDir, Port: fc.Agent.Port, ReleaseURL: fc.Agent.ReleaseURL}
	}
	conf := Config{
		Agent:         ag,
		BinaryDir:     fc.BinaryDir,
		ReleaseURL:    fc.ReleaseURL,
		Offline:       fc.Offline,
		ReadyTimeout:  fc.readyTimeout,
		KubeconfigDir: fc.KubeconfigDir,
		KubeConfig:    fc.Kubeconfig,
		SSH:           remote.Options{DefaultPort: fc.SSH.Port, Identity: fc.identity},
		AddressMap:    fc.addressMap,
		Logger:        opts.Logger,
	}
	if sb := fc.sandbox; sb != nil {
		conf.SSH.Identity = sb.Identity
		conf.AddressMap = sb.AddressMap
	}
	return New(conf)
}

// Sandbox starts d.SandboxHosts and returns the configuration that
// manages them: binaries downloaded from the sandbox's release server,
// kubeconfigs kept in its directory, its SSH port and key, its address
// map.
func (d Driver) Sandbox(ctx context.Context, opts registry.SandboxOptions) (*registry.Sandbox, error) {
	if d.SandboxHosts == nil {
		return nil, errcode.New(errcode.Invalid, "the k3s provider has no sandbox in this program: run without --sandbox against real hosts")
	}
	sb, err := d.SandboxHosts(ctx, opts)
	if err != nil {
		return nil, err
	}
	fc := &fileConfig{
		BinaryDir:     filepath.Join(sb.Dir, "k3s"),
		ReleaseURL:    sb.ReleaseURL,
		KubeconfigDir: filepath.Join(sb.Dir, "kubeconfigs"),
		Kubeconfig:    filepath.Join(sb.Dir, "kubeconfig"),
		sandbox:       sb,
	}
	fc.Agent.BinaryDir = sb.AgentBinaryDir
	fc.SSH.Port = sb.SSHPort
	return &registry.Sandbox{Config: fc, Description: sb.Description, Close: sb.Close}, nil
}
