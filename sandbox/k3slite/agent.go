package k3slite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// runAgent runs `k3s agent` until ctx ends, as the stand-in's RunAgent:
// it validates the server against the token's CA hash and credentials,
// logging the error and retrying every 2 s; fetches its kubelet client
// certificate (the server checks the node password), retrying every 5 s
// with "Waiting to retrieve agent configuration"; registers its Node (no
// roles), signals ready and keeps the node's heartbeat, Lease and pods.
func (n *Network) runAgent(ctx context.Context, c *vmhost.Call, cfg agentConfig, log *slog.Logger) error {
	f := callFS(c)
	log.Info(fmt.Sprintf("Starting k3s agent %s (%s)", cfg.Version.K3s, cfg.Version.short()))
	for _, fl := range cfg.Ignored {
		log.Warn("flag not implemented by the k3s stand-in; ignored", "flag", "--"+fl)
	}
	nodeIP, err := pickNodeIP(c.Host, cfg.NodeIP, "")
	if err != nil {
		return err
	}
	nodePW, err := nodePassword(f, cfg.NodePasswordFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

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
	agentDir := path.Join(cfg.DataDir, "agent")
	kubeconfig := path.Join(agentDir, "kubelet.kubeconfig")
	crt, key := splitPEM(certKey)
	if err := writeAgentFiles(f, agentDir, kubeconfig, cfg.Server, sc.caPEM, crt, key); err != nil {
		return err
	}
	restCfg := &rest.Config{Host: cfg.Server, Dial: lb.Dial, QPS: 100, Burst: 200, Timeout: 10 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: sc.caPEM, CertData: crt, KeyData: key, ServerName: k3semu.BalancerServerName}}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("standin: client: %w", err)
	}
	na := &k3semu.NodeAgent{Client: client, Log: log, Spec: k3semu.NodeSpec{
		Name: cfg.NodeName, IP: nodeIP, Version: cfg.Version.K3s, Labels: cfg.NodeLabels, Taints: cfg.NodeTaints,
	}}
	for {
		err := na.Register(ctx)
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
	c.NotifyReady()
	done := make(chan struct{})
	go func() { defer close(done); na.RunPods(ctx, n.opts.PodSyncInterval) }()
	defer func() { cancel(); <-done }()
	heartbeat := time.NewTicker(n.opts.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Shutting down k3s agent")
			return ctx.Err()
		case <-heartbeat.C:
			if err := na.Heartbeat(ctx); err != nil && ctx.Err() == nil {
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
func writeAgentFiles(f hostFS, agentDir, kubeconfig, server string, caPEM, crt, key []byte) error {
	if len(crt) == 0 || len(key) == 0 {
		return errors.New("standin: client-kubelet.crt: answer without certificate or key")
	}
	if err := f.writeFile(path.Join(agentDir, "server-ca.crt"), caPEM, 0o644); err != nil {
		return err
	}
	if err := f.writeFile(path.Join(agentDir, "client-kubelet.crt"), crt, 0o644); err != nil {
		return err
	}
	if err := f.writeFile(path.Join(agentDir, "client-kubelet.key"), key, 0o600); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: path.Join(agentDir, "server-ca.crt")}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		ClientCertificate: path.Join(agentDir, "client-kubelet.crt"),
		ClientKey:         path.Join(agentDir, "client-kubelet.key"),
	}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("standin: kubelet kubeconfig: %w", err)
	}
	return f.writeFile(kubeconfig, data, 0o600)
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
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
