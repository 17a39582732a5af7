package k3semu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// ServerConfig is what `k3s server` was asked to do. Fields come from flags,
// then K3S_* variables for flags not given. Not safe for concurrent mutation.
type ServerConfig struct {
	ClusterInit     bool
	Server          string   // --server, -s, K3S_URL: join the cluster of this server
	DataDir         string   // --data-dir, K3S_DATA_DIR; default /var/lib/rancher/k3s
	BindAddress     string   // --bind-address; empty: all addresses
	HTTPSListenPort int      // --https-listen-port; default 6443
	Token           string   // --token, K3S_TOKEN (or --token-file, K3S_TOKEN_FILE)
	AgentToken      string   // --agent-token, K3S_AGENT_TOKEN (or --agent-token-file, K3S_AGENT_TOKEN_FILE)
	TLSSANs         []string // --tls-san, repeatable
	NodeName        string   // --node-name, K3S_NODE_NAME; default hostname
	NodeIP          string   // --node-ip
	NodeLabels      []string // --node-label k=v, at registration
	NodeTaints      []string // --node-taint k=v:Effect, at registration
	KubeconfigMode  string   // --write-kubeconfig-mode, K3S_KUBECONFIG_MODE; default 0600
	KubeconfigPath  string   // --write-kubeconfig, K3S_KUBECONFIG_OUTPUT
	ServiceCIDR     string   // --service-cidr; default 10.43.0.0/16
	APIServerArgs   []string // --kube-apiserver-arg k=v, appended to the apiserver's flags
	ConfigFile      string   // --config, -c, K3S_CONFIG_FILE; default DefaultConfigFile

	// ConfigWarnings are k3s's warnings about config-file keys that are
	// not server flags (skipped).
	ConfigWarnings []string

	// Stand-in only: etcd's client and peer ports (k3s: 2379, 2380), so
	// several servers can run on one loopback.
	EtcdClientPort int
	EtcdPeerPort   int
	// Stand-in only: where the node password lives (k3s:
	// /etc/rancher/node/password), so several nodes can share one host.
	NodePasswordFile string
	// Stand-in only: kube-controller-manager's --node-monitor-grace-period
	// (50s): a node whose Lease is older turns Unknown (NotReady).
	NodeMonitorGracePeriod time.Duration

	// Ignored records accepted flags the twins do not act on yet.
	Ignored []string

	// Critical holds the values every server of a cluster must share
	// (docs/cli/server.md, "Critical Configuration Values"), by flag name,
	// defaults filled in; a joiner compares them with the cluster's.
	// Apart from service-cidr the twins do not act on them.
	Critical map[string]string

	Version Version // set from the binary's version line
}

// ParseServerArgs parses `k3s server` arguments. lookupEnv is os.LookupEnv
// in the binary. An unknown flag or a bad value is an error.
func ParseServerArgs(f FS, args []string, lookupEnv func(string) (string, bool)) (ServerConfig, error) {
	args, warnings, err := withConfigFile(f, "server", args, lookupEnv, func() *pflag.FlagSet {
		fs, _, _ := serverFlags(&ServerConfig{})
		return fs
	})
	if err != nil {
		return ServerConfig{}, err
	}
	cfg := ServerConfig{ConfigWarnings: warnings}
	fs, tokenFile, agentTokenFile := serverFlags(&cfg)
	if err := fs.Parse(args); err != nil {
		return ServerConfig{}, fmt.Errorf("standin: server: %w", err)
	}
	if fs.NArg() > 0 {
		return ServerConfig{}, fmt.Errorf("standin: server: unexpected arguments %q", fs.Args())
	}
	var ignored []string
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "disable":
			ignored = append(ignored, f.Name)
		default:
			if slices.Contains(ignoredStrings, f.Name) || slices.Contains(ignoredArrays, f.Name) || slices.Contains(ignoredBools, f.Name) {
				ignored = append(ignored, f.Name)
			}
		}
	})
	cfg.Ignored = ignored
	return finishServerConfig(f, cfg, fs, tokenFile, agentTokenFile, lookupEnv)
}

// serverFlags defines `k3s server`'s flags on cfg; the token file flags'
// values are returned apart.
func serverFlags(cfg *ServerConfig) (fs *pflag.FlagSet, tokenFile, agentTokenFile *string) {
	fs = pflag.NewFlagSet("server", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.BoolVar(&cfg.ClusterInit, "cluster-init", false, "")
	fs.StringVarP(&cfg.DataDir, "data-dir", "d", "/var/lib/rancher/k3s", "")
	fs.StringVar(&cfg.BindAddress, "bind-address", "", "")
	fs.IntVar(&cfg.HTTPSListenPort, "https-listen-port", 6443, "")
	fs.StringVarP(&cfg.Token, "token", "t", "", "")
	tokenFile = fs.String("token-file", "", "")
	fs.StringArrayVar(&cfg.TLSSANs, "tls-san", nil, "")
	fs.StringVar(&cfg.NodeName, "node-name", "", "")
	fs.StringVarP(&cfg.NodeIP, "node-ip", "i", "", "")
	fs.StringArrayVar(&cfg.NodeLabels, "node-label", nil, "")
	fs.StringArrayVar(&cfg.NodeTaints, "node-taint", nil, "")
	fs.StringVar(&cfg.KubeconfigMode, "write-kubeconfig-mode", "", "")
	fs.StringVarP(&cfg.KubeconfigPath, "write-kubeconfig", "o", "", "")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.43.0.0/16", "")
	fs.StringArrayVar(&cfg.APIServerArgs, "kube-apiserver-arg", nil, "")
	fs.IntVar(&cfg.EtcdClientPort, "standin-etcd-client-port", 2379, "")
	fs.IntVar(&cfg.EtcdPeerPort, "standin-etcd-peer-port", 2380, "")
	fs.StringVar(&cfg.NodePasswordFile, "standin-node-password-file", DefaultNodePasswordFile, "")
	fs.StringVarP(&cfg.Server, "server", "s", "", "")
	fs.DurationVar(&cfg.NodeMonitorGracePeriod, "standin-node-monitor-grace-period", DefaultNodeMonitorGracePeriod, "")
	fs.StringVarP(&cfg.ConfigFile, "config", "c", DefaultConfigFile, "")
	fs.StringVar(&cfg.AgentToken, "agent-token", "", "")
	agentTokenFile = fs.String("agent-token-file", "", "")
	for _, name := range ignoredStrings {
		fs.String(name, criticalDefaults[name], "")
	}
	fs.StringArray("disable", nil, "")
	for _, name := range ignoredArrays {
		fs.StringArray(name, nil, "")
	}
	for _, name := range ignoredBools {
		fs.Bool(name, false, "")
	}
	return fs, tokenFile, agentTokenFile
}

// finishServerConfig fills in what parsing leaves: critical values, K3S_*
// variables for flags not set, token files, checks and defaults.
func finishServerConfig(hf FS, cfg ServerConfig, fs *pflag.FlagSet, tokenFile, agentTokenFile *string, lookupEnv func(string) (string, bool)) (ServerConfig, error) {
	cfg.Critical = map[string]string{}
	for _, name := range []string{"cluster-cidr", "service-cidr", "cluster-dns", "cluster-domain", "flannel-backend", "egress-selector-mode"} {
		cfg.Critical[name] = fs.Lookup(name).Value.String()
	}
	for _, name := range []string{"secrets-encryption", "disable-network-policy", "disable-cloud-controller", "disable-helm-controller", "disable-kube-proxy"} {
		cfg.Critical[name] = fs.Lookup(name).Value.String()
	}
	disables, _ := fs.GetStringArray("disable")
	cfg.Critical["disable-servicelb"] = strconv.FormatBool(slices.ContainsFunc(disables, func(d string) bool {
		return slices.Contains(strings.Split(d, ","), "servicelb")
	}))

	fromEnv(fs, lookupEnv, &cfg.ConfigFile, []envVar{
		{"data-dir", "K3S_DATA_DIR", &cfg.DataDir},
		{"token", "K3S_TOKEN", &cfg.Token},
		{"server", "K3S_URL", &cfg.Server},
		{"agent-token", "K3S_AGENT_TOKEN", &cfg.AgentToken},
		{"agent-token-file", "K3S_AGENT_TOKEN_FILE", agentTokenFile},
		{"token-file", "K3S_TOKEN_FILE", tokenFile},
		{"node-name", "K3S_NODE_NAME", &cfg.NodeName},
		{"write-kubeconfig-mode", "K3S_KUBECONFIG_MODE", &cfg.KubeconfigMode},
		{"write-kubeconfig", "K3S_KUBECONFIG_OUTPUT", &cfg.KubeconfigPath},
	})
	if !fs.Changed("cluster-init") {
		if v, ok := lookupEnv("K3S_CLUSTER_INIT"); ok && v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return ServerConfig{}, fmt.Errorf("standin: K3S_CLUSTER_INIT: %w", err)
			}
			cfg.ClusterInit = b
		}
	}
	if err := tokenFromFile(hf, &cfg.Token, *tokenFile, "token file"); err != nil {
		return ServerConfig{}, err
	}
	if err := tokenFromFile(hf, &cfg.AgentToken, *agentTokenFile, "agent token file"); err != nil {
		return ServerConfig{}, err
	}
	if cfg.Server != "" {
		if !strings.HasPrefix(cfg.Server, "https://") {
			return ServerConfig{}, fmt.Errorf("standin: --server %q: only https:// URLs are supported", cfg.Server)
		}
		if cfg.Token == "" {
			return ServerConfig{}, fmt.Errorf("--token is required when joining a cluster with --server")
		}
	}
	if cfg.KubeconfigMode != "" {
		if _, err := strconv.ParseUint(cfg.KubeconfigMode, 8, 32); err != nil {
			return ServerConfig{}, fmt.Errorf("standin: --write-kubeconfig-mode %q is not an octal mode", cfg.KubeconfigMode)
		}
	}
	if cfg.KubeconfigPath == "" {
		cfg.KubeconfigPath = DefaultKubeconfig
	}
	if cfg.NodeName == "" {
		name, err := nodeName(hf)
		if err != nil {
			return ServerConfig{}, err
		}
		cfg.NodeName = name
	}
	return cfg, nil
}

// criticalDefaults are k3s's defaults of the critical values the twins
// only record.
var criticalDefaults = map[string]string{
	"cluster-cidr": "10.42.0.0/16", "cluster-dns": "10.43.0.10", "cluster-domain": "cluster.local",
	"flannel-backend": "vxlan", "egress-selector-mode": "agent",
}

// Server flags the twins have nothing to apply to; they are accepted
// with a warning.
var (
	ignoredStrings = []string{"advertise-address", "node-external-ip", "flannel-iface", "flannel-backend",
		"cluster-cidr", "cluster-dns", "cluster-domain", "resolv-conf", "private-registry",
		"pause-image", "egress-selector-mode", "log"}
	ignoredArrays = []string{"kubelet-arg", "kube-proxy-arg", "kube-controller-manager-arg",
		"kube-scheduler-arg", "kube-cloud-controller-manager-arg", "etcd-arg"}
	ignoredBools = []string{"debug", "selinux", "protect-kernel-defaults", "disable-network-policy",
		"disable-kube-proxy", "disable-cloud-controller", "disable-helm-controller", "secrets-encryption"}
)

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// envVar is a flag's K3S_* environment variable and where its value goes.
type envVar struct {
	flag, name string
	dst        *string
}

// fromEnv sets each flag that was not given from its variable, as k3s's
// EnvVars do, and configFile from K3S_CONFIG_FILE, which wins over
// --config.
func fromEnv(fs *pflag.FlagSet, lookupEnv func(string) (string, bool), configFile *string, vars []envVar) {
	if v, ok := lookupEnv("K3S_CONFIG_FILE"); ok && v != "" {
		*configFile = v
	}
	for _, e := range vars {
		if fs.Changed(e.flag) {
			continue
		}
		if v, ok := lookupEnv(e.name); ok && v != "" {
			*e.dst = v
		}
	}
}

// tokenFromFile sets an empty *token from the file at path, if any.
func tokenFromFile(f FS, token *string, path, what string) error {
	if *token != "" || path == "" {
		return nil
	}
	b, err := f.ReadFile(path)
	if err != nil {
		return fmt.Errorf("standin: %s: %w", what, err)
	}
	*token = strings.TrimSpace(string(b))
	return nil
}
