package k3slite

import (
	"context"
	"net"
	"net/url"

	"k8s.io/client-go/kubernetes"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// runTokenCmd is `k3s token <command>` on c's host.
func (n *Network) runTokenCmd(ctx context.Context, c *vmhost.Call, args []string, lookupEnv func(string) (string, bool)) int {
	f := callFS(c)
	env := k3semu.TokenEnv{
		FS: f,
		AdminClient: func(kubeconfig string) (kubernetes.Interface, []byte, error) {
			return n.adminClient(f, kubeconfig, lookupEnv)
		},
		ServerURL: func(raw string) string { return hostLocal(n.localAddr(c.Host, ""), raw) },
	}
	return k3semu.TokenCmd(ctx, env, args, lookupEnv, c.Stdout, c.Stderr)
}

// adminClient is a client from kubeconfig and the CA it trusts.
func (n *Network) adminClient(f hostFS, kubeconfig string, lookupEnv func(string) (string, bool)) (kubernetes.Interface, []byte, error) {
	restCfg, _, err := n.kubectlConfig(f, kubeconfig, lookupEnv)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, err
	}
	return client, restCfg.TLSClientConfig.CAData, nil
}

// hostLocal makes a URL on the loopback (127.0.0.1, localhost, ::1) one
// on the host's own address (local, host:port with an empty port when
// unknown): sandbox hosts share the machine's loopback.
func hostLocal(local, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1":
		host, _, _ := net.SplitHostPort(local)
		port := u.Port()
		if port == "" {
			port = "443"
		}
		u.Host = net.JoinHostPort(host, port)
		return u.String()
	}
	return raw
}
