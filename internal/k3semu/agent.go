package k3semu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/backoff"
)

// Agent is a running `k3s agent` once its flags are read: the twin picks
// its node IP and node password, then [Agent.Run] joins the cluster.
type Agent struct {
	FS       FS
	Server   string // --server
	Token    string // --token
	DataDir  string // --data-dir
	NodeName string
	NodeIP   net.IP
	// NodePassword is the node's password from its password file.
	NodePassword string
	Labels       []string // --node-label, first registration only
	Taints       []string // --node-taint, first registration only
	Version      string   // the k3s release the Node reports
	Log          *slog.Logger
	// Ready is called once the Node is registered (systemd's READY=1).
	Ready func()
	// PodSyncInterval and HeartbeatInterval pace the fake kubelet.
	PodSyncInterval, HeartbeatInterval time.Duration
}

// Run runs the agent until ctx ends. It validates the server against the
// token's CA hash and credentials, logging the error and retrying every
// 2 s; fetches its kubelet client certificate (the server checks the node
// password), retrying every 5 s with "Waiting to retrieve agent
// configuration"; registers its Node (no roles), signals ready and keeps
// the node's heartbeat, Lease and pods, reaching the servers through the
// client load balancer.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := a.Log
	sc, err := a.validate(ctx)
	if err != nil {
		return err
	}
	certKey, err := a.kubeletCert(ctx, sc)
	if err != nil {
		return err
	}
	// From here on, through the load balancer over the cluster's servers.
	lb, err := NewBalancer(a.Server, log)
	if err != nil {
		return err
	}
	sc.http = lb.HTTPClient(sc.caPEM)
	if list, err := sc.APIServers(ctx); err == nil {
		lb.Update(list)
	} else {
		log.Warn("Failed to get the list of servers; using --server only", "err", err)
	}
	agentDir := path.Join(a.DataDir, "agent")
	crt, key := splitPEM(certKey)
	if err := writeAgentFiles(a.FS, agentDir, path.Join(agentDir, "kubelet.kubeconfig"), a.Server, sc.caPEM, crt, key); err != nil {
		return err
	}
	restCfg := &rest.Config{Host: a.Server, Dial: lb.Dial, QPS: 100, Burst: 200, Timeout: 10 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: sc.caPEM, CertData: crt, KeyData: key, ServerName: BalancerServerName}}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("standin: client: %w", err)
	}
	na := &NodeAgent{Client: client, Log: log, Spec: NodeSpec{
		Name: a.NodeName, IP: a.NodeIP, Version: a.Version, Labels: a.Labels, Taints: a.Taints,
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
		if err := backoff.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	log.Info("k3s agent is up and running")
	if a.Ready != nil {
		a.Ready()
	}
	done := make(chan struct{})
	go func() { defer close(done); na.RunPods(ctx, a.PodSyncInterval) }()
	defer func() { cancel(); <-done }()
	heartbeat := time.NewTicker(a.HeartbeatInterval)
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
			if list, err := sc.APIServers(ctx); err == nil {
				lb.Update(list)
			}
		}
	}
}

// validate checks the server and the token every 2 s until they pass.
func (a *Agent) validate(ctx context.Context) (*SupervisorClient, error) {
	for {
		sc, err := ValidateServer(ctx, a.Server, a.Token, "", func(m string) { a.Log.Warn(m) })
		if err == nil {
			if _, err = sc.Get(ctx, "/v1-k3s/readyz", nil); err != nil {
				err = fmt.Errorf("token is not valid: %w", err)
			}
		}
		if err == nil {
			return sc, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a.Log.Error(err.Error())
		if err := backoff.Sleep(ctx, 2*time.Second); err != nil {
			return nil, err
		}
	}
}

// kubeletCert fetches the kubelet's client certificate and key every 5 s
// until the server gives them.
func (a *Agent) kubeletCert(ctx context.Context, sc *SupervisorClient) ([]byte, error) {
	for {
		certKey, err := sc.Get(ctx, "/v1-k3s/client-kubelet.crt", map[string]string{
			"k3s-Node-Name": a.NodeName, "k3s-Node-Password": a.NodePassword,
		})
		if err == nil {
			return certKey, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var he *HTTPStatusError
		if errors.As(err, &he) && he.Code == http.StatusForbidden && he.Body != "" {
			err = errors.New(he.Body)
		}
		a.Log.Info("Waiting to retrieve agent configuration; server is not ready: " + err.Error())
		if err := backoff.Sleep(ctx, 5*time.Second); err != nil {
			return nil, err
		}
	}
}

// writeAgentFiles writes agent/server-ca.crt, the kubelet's client
// certificate and key, and agent/kubelet.kubeconfig using them.
func writeAgentFiles(f FS, agentDir, kubeconfig, server string, caPEM, crt, key []byte) error {
	if len(crt) == 0 || len(key) == 0 {
		return errors.New("standin: client-kubelet.crt: answer without certificate or key")
	}
	if err := f.WriteFile(path.Join(agentDir, "server-ca.crt"), caPEM, 0o644); err != nil {
		return err
	}
	if err := f.WriteFile(path.Join(agentDir, "client-kubelet.crt"), crt, 0o644); err != nil {
		return err
	}
	if err := f.WriteFile(path.Join(agentDir, "client-kubelet.key"), key, 0o600); err != nil {
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
	return f.WriteFile(kubeconfig, data, 0o600)
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
