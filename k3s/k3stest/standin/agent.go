package standin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/internal/k3semu"
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
	NodePasswordFile string   // stand-in only: --standin-node-password-file
	ConfigFile       string   // --config, -c, K3S_CONFIG_FILE; default DefaultConfigFile
	Ignored          []string
	Version          Version
}

// ParseAgentArgs parses `k3s agent` arguments. A missing token or server,
// or a server URL that is not https, is a configuration error.
func ParseAgentArgs(args []string, lookupEnv func(string) (string, bool)) (AgentConfig, error) {
	args, _, err := withConfigFile("agent", args, lookupEnv, func() *pflag.FlagSet {
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
	env := func(flag, name string, dst *string) {
		if fs.Changed(flag) {
			return
		}
		if v, ok := lookupEnv(name); ok && v != "" {
			*dst = v
		}
	}
	if v, ok := lookupEnv("K3S_CONFIG_FILE"); ok && v != "" {
		cfg.ConfigFile = v // k3s: the variable wins over --config
	}
	env("server", "K3S_URL", &cfg.Server)
	env("token", "K3S_TOKEN", &cfg.Token)
	env("token-file", "K3S_TOKEN_FILE", tokenFile)
	env("data-dir", "K3S_DATA_DIR", &cfg.DataDir)
	env("node-name", "K3S_NODE_NAME", &cfg.NodeName)
	if cfg.Token == "" && *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return AgentConfig{}, fmt.Errorf("standin: token file: %w", err)
		}
		cfg.Token = strings.TrimSpace(string(b))
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
		h, err := os.Hostname()
		if err != nil {
			return AgentConfig{}, fmt.Errorf("standin: node name: %w", err)
		}
		cfg.NodeName = strings.ToLower(h)
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

// RunAgent runs `k3s agent` until ctx ends. Like k3s it first validates
// the server against the token's CA hash and the token's credentials,
// logging the error and retrying every 2 s; then it fetches its kubelet
// client certificate (the server checks the node password), retrying
// every 5 s with "Waiting to retrieve agent configuration"; then it
// registers its Node (no roles), signals READY=1 and keeps the node's
// heartbeat, Lease and pods.
func RunAgent(ctx context.Context, cfg AgentConfig, log *slog.Logger) error {
	notifySocket := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	log.Info(fmt.Sprintf("Starting k3s agent %s (%s)", cfg.Version.K3s, cfg.Version.short()))
	for _, f := range cfg.Ignored {
		log.Warn("flag not implemented by the k3s stand-in; ignored", "flag", "--"+f)
	}
	nodeIP, err := pickNodeIP(cfg.NodeIP, "")
	if err != nil {
		return err
	}
	nodePW, err := nodePassword(cfg.NodePasswordFile)
	if err != nil {
		return err
	}

	// Token and server validation: every 2 s until it passes.
	var sc *supervisorClient
	for {
		sc, err = validateServer(ctx, cfg.Server, cfg.Token, "", func(m string) { log.Warn(m) })
		if err == nil {
			if _, err = sc.get(ctx, "/v1-k3s/readyz", nil); err != nil {
				err = fmt.Errorf("token is not valid: %w", err)
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Error(err.Error())
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return err
		}
	}

	// Agent configuration: the kubelet's client certificate.
	var certKey []byte
	for {
		certKey, err = sc.get(ctx, "/v1-k3s/client-kubelet.crt", map[string]string{
			"k3s-Node-Name": cfg.NodeName, "k3s-Node-Password": nodePW,
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *httpStatusError
		if errors.As(err, &he) && he.Code == http.StatusForbidden && he.Body != "" {
			err = errors.New(he.Body)
		}
		log.Info("Waiting to retrieve agent configuration; server is not ready: " + err.Error())
		if err := sleepCtx(ctx, 5*time.Second); err != nil {
			return err
		}
	}
	// From here on, through the load balancer over the cluster's servers.
	lb, err := k3semu.NewBalancer(cfg.Server, log)
	if err != nil {
		return err
	}
	sc.http = lb.HTTPClient(sc.caPEM)
	if list, err := sc.apiServers(ctx); err == nil {
		lb.Update(list)
	} else {
		log.Warn("Failed to get the list of servers; using --server only", "err", err)
	}
	agentDir := filepath.Join(cfg.DataDir, "agent")
	kubeconfig := filepath.Join(agentDir, "kubelet.kubeconfig")
	if err := writeAgentFiles(agentDir, kubeconfig, cfg.Server, sc.caPEM, certKey); err != nil {
		return err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("standin: kubelet kubeconfig: %w", err)
	}
	restCfg = rest.CopyConfig(restCfg)
	restCfg.Dial = lb.Dial
	restCfg.TLSClientConfig.ServerName = k3semu.BalancerServerName
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("standin: client: %w", err)
	}
	n := &k3semu.NodeAgent{Client: client, Log: log, Spec: k3semu.NodeSpec{
		Name: cfg.NodeName, IP: nodeIP, Version: cfg.Version.K3s, Labels: cfg.NodeLabels, Taints: cfg.NodeTaints,
	}}
	for {
		err := n.Register(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("Unable to register node", "err", err)
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	log.Info("k3s agent is up and running")
	if err := notifyReady(notifySocket); err != nil {
		log.Warn("systemd notify failed", "err", err)
	}
	go n.RunPods(ctx, time.Second)
	heartbeat := time.NewTicker(10 * time.Second)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Shutting down k3s agent")
			return ctx.Err()
		case <-heartbeat.C:
			if err := n.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				log.Warn("node heartbeat failed", "err", err)
			}
			if list, err := sc.apiServers(ctx); err == nil {
				lb.Update(list)
			}
		}
	}
}

// writeAgentFiles writes agent/server-ca.crt, the kubelet's client
// certificate and key, and agent/kubelet.kubeconfig using them.
func writeAgentFiles(agentDir, kubeconfig, server string, caPEM, certKey []byte) error {
	crt, key := splitPEM(certKey)
	if len(crt) == 0 || len(key) == 0 {
		return errors.New("standin: client-kubelet.crt: answer without certificate or key")
	}
	if err := writeFile(filepath.Join(agentDir, "server-ca.crt"), caPEM, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(agentDir, "client-kubelet.crt"), crt, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(agentDir, "client-kubelet.key"), key, 0o600); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: filepath.Join(agentDir, "server-ca.crt")}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		ClientCertificate: filepath.Join(agentDir, "client-kubelet.crt"),
		ClientKey:         filepath.Join(agentDir, "client-kubelet.key"),
	}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("standin: kubelet kubeconfig: %w", err)
	}
	return writeFile(kubeconfig, data, 0o600)
}

// splitPEM separates the CERTIFICATE blocks from the key block.
func splitPEM(b []byte) (certs, key []byte) {
	s := string(b)
	i := strings.Index(s, "-----BEGIN PRIVATE KEY-----")
	if i < 0 {
		i = strings.Index(s, "-----BEGIN EC PRIVATE KEY-----")
	}
	if i < 0 {
		return b, nil
	}
	return []byte(s[:i]), []byte(s[i:])
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
