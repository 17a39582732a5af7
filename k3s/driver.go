package k3s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
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
//	    agent:                              # openctl's node agent, on every node
//	      binaryDir: ~/.openctl/cache/agent # openctl-agent-linux-<arch>: `make cross` writes them to bin/
//	      port: 9443
//	      releaseURL: https://mirror.lan/k3s # where agents download upgrades (default: releaseURL)
//	      enabled: true                     # false: nodes get no agent (day-2 actions refused)
//
// The defaults are under openctl's home directory ($OPENCTL_HOME, else
// ~/.openctl). The provider has no contexts: where each node is comes
// from the manifests.
type Driver struct{}

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

	readyTimeout time.Duration
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
	return New(Config{
		Agent:         ag,
		BinaryDir:     fc.BinaryDir,
		ReleaseURL:    fc.ReleaseURL,
		Offline:       fc.Offline,
		ReadyTimeout:  fc.readyTimeout,
		KubeconfigDir: fc.KubeconfigDir,
		KubeConfig:    fc.Kubeconfig,
		Logger:        opts.Logger,
	})
}
