package k3semu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// AgentConfig is what `k3s agent` was asked to do: flags, then K3S_*
// variables for flags not given.
type AgentConfig struct {
	Server           string   // --server, -s, K3S_URL (required)
	Token            string   // --token, -t, K3S_TOKEN, or --token-file, K3S_TOKEN_FILE (required)
	DataDir          string   // --data-dir, K3S_DATA_DIR; default /var/lib/rancher/k3s
	NodeName         string   // --node-name, K3S_NODE_NAME; default hostname
	NodeIP           string   // --node-ip
	NodeLabels       []string // --node-label, first registration only
	NodeTaints       []string // --node-taint, first registration only
	NodePasswordFile string   // twins only: --standin-node-password-file
	ConfigFile       string   // --config, -c, K3S_CONFIG_FILE; default DefaultConfigFile
	Ignored          []string
	Version          Version
}

// ParseAgentArgs parses `k3s agent` arguments. A missing token or server,
// or a server URL that is not https, is a configuration error.
func ParseAgentArgs(hf FS, args []string, lookupEnv func(string) (string, bool)) (AgentConfig, error) {
	args, _, err := withConfigFile(hf, "agent", args, lookupEnv, func() *pflag.FlagSet {
		fs, _, _ := agentFlags(&AgentConfig{})
		return fs
	})
	if err != nil {
		return AgentConfig{}, err
	}
	cfg := AgentConfig{}
	fs, tokenFile, ignoredFlags := agentFlags(&cfg)
	if err := fs.Parse(args); err != nil {
		return AgentConfig{}, fmt.Errorf("standin: agent: %w", err)
	}
	if fs.NArg() > 0 {
		return AgentConfig{}, fmt.Errorf("standin: agent: unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *pflag.Flag) {
		for _, n := range ignoredFlags {
			if f.Name == n {
				cfg.Ignored = append(cfg.Ignored, n)
			}
		}
	})
	fromEnv(fs, lookupEnv, &cfg.ConfigFile, []envVar{
		{"server", "K3S_URL", &cfg.Server},
		{"token", "K3S_TOKEN", &cfg.Token},
		{"token-file", "K3S_TOKEN_FILE", tokenFile},
		{"data-dir", "K3S_DATA_DIR", &cfg.DataDir},
		{"node-name", "K3S_NODE_NAME", &cfg.NodeName},
	})
	if err := tokenFromFile(hf, &cfg.Token, *tokenFile, "token file"); err != nil {
		return AgentConfig{}, err
	}
	if cfg.Server == "" {
		return AgentConfig{}, errors.New("--server is required")
	}
	if !strings.HasPrefix(cfg.Server, "https://") {
		return AgentConfig{}, fmt.Errorf("--server %q: only https:// URLs are supported", cfg.Server)
	}
	if cfg.Token == "" {
		return AgentConfig{}, errors.New("--token is required")
	}
	if cfg.NodeName == "" {
		name, err := nodeName(hf)
		if err != nil {
			return AgentConfig{}, err
		}
		cfg.NodeName = name
	}
	return cfg, nil
}

// agentFlags defines `k3s agent`'s flags on cfg; it returns the token
// file flag's value and the names of the flags accepted but ignored.
func agentFlags(cfg *AgentConfig) (fs *pflag.FlagSet, tokenFile *string, ignored []string) {
	fs = pflag.NewFlagSet("agent", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.StringVarP(&cfg.Server, "server", "s", "", "")
	fs.StringVarP(&cfg.Token, "token", "t", "", "")
	tokenFile = fs.String("token-file", "", "")
	fs.StringVarP(&cfg.DataDir, "data-dir", "d", "/var/lib/rancher/k3s", "")
	fs.StringVar(&cfg.NodeName, "node-name", "", "")
	fs.StringVarP(&cfg.NodeIP, "node-ip", "i", "", "")
	fs.StringArrayVar(&cfg.NodeLabels, "node-label", nil, "")
	fs.StringArrayVar(&cfg.NodeTaints, "node-taint", nil, "")
	fs.StringVar(&cfg.NodePasswordFile, "standin-node-password-file", DefaultNodePasswordFile, "")
	fs.StringVarP(&cfg.ConfigFile, "config", "c", DefaultConfigFile, "")
	ignored = []string{"node-external-ip", "flannel-iface", "bind-address",
		"resolv-conf", "lb-server-port", "pause-image", "private-registry", "container-runtime-endpoint",
		"flannel-conf", "log"}
	for _, name := range ignored {
		fs.String(name, "", "")
	}
	agentArrays := []string{"kubelet-arg", "kube-proxy-arg"}
	agentBools := []string{"debug", "selinux", "protect-kernel-defaults"}
	for _, name := range agentArrays {
		fs.StringArray(name, nil, "")
	}
	for _, name := range agentBools {
		fs.Bool(name, false, "")
	}
	return fs, tokenFile, append(append(ignored, agentArrays...), agentBools...)
}
