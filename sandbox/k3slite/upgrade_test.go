package k3slite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/sandbox/k3slite"
)

// The provider's shape: --cluster-init with K3S_TOKEN and K3S_AGENT_TOKEN
// in the environment, flags on the command line; joiners with the full
// tokens; an upgrade swaps the binary and restarts; a binary reporting
// another version shows that version (the health gate's failure).
func TestProviderShapeAndUpgrade(t *testing.T) {
	n := newNetwork(t)
	ctx := context.Background()
	s0 := newHost(t, n, "u0", "127.80.205.10", "v1.37.2+k3s1")
	args := []string{"server", "--node-name=u0", "--node-ip=127.80.205.10", "--cluster-init", "--write-kubeconfig-mode=0600",
		"--tls-san=127.80.205.254", "--cluster-cidr=10.42.0.0/16", "--disable=traefik", "--flannel-backend=vxlan"}
	env := []string{"K3S_TOKEN=serverpw", "K3S_AGENT_TOKEN=agentpw"}
	p0 := start(t, n, s0, env, args...)
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	agentToken := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/agent-token", nil))
	if !strings.HasSuffix(token, "::server:serverpw") || !strings.HasSuffix(agentToken, "::node:agentpw") {
		t.Fatalf("tokens %q %q", token, agentToken)
	}
	if fi, _ := fsStat(s0, "/etc/rancher/k3s/k3s.yaml"); fi != "-rw-------" {
		t.Fatalf("kubeconfig mode %s", fi)
	}
	// A joiner with another agent token or cluster CIDR is refused.
	s1 := newHost(t, n, "u1", "127.80.205.11", "v1.37.2+k3s1")
	bad := start(t, n, s1, []string{"K3S_TOKEN=" + token, "K3S_AGENT_TOKEN=other"}, "server", "--server=https://127.80.205.10:6443", "--cluster-cidr=10.99.0.0/16", "--disable=traefik")
	if st := bad.wait(t); st != 1 || !strings.Contains(bad.log.String(), `level=warning msg="critical configuration mismatched: agent-token"`) ||
		!strings.Contains(bad.log.String(), `level=warning msg="critical configuration mismatched: cluster-cidr"`) ||
		!strings.Contains(bad.log.String(), `level=fatal msg="starting kubernetes: preparing server: failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers"`) {
		t.Fatalf("critical mismatch: %d\n%s", st, bad.log.String())
	}
	p1 := start(t, n, s1, []string{"K3S_TOKEN=" + token, "K3S_AGENT_TOKEN=" + agentToken}, "server", "--node-name=u1", "--node-ip=127.80.205.11", "--server=https://127.80.205.10:6443", "--disable=traefik")
	p1.waitReady(t)
	a0 := newHost(t, n, "ua", "127.80.205.20", "v1.37.2+k3s1")
	pa := start(t, n, a0, []string{"K3S_TOKEN=" + agentToken}, "agent", "--node-name=ua", "--node-ip=127.80.205.20", "--server=https://127.80.205.10:6443", "--flannel-iface=eth0")
	pa.waitReady(t)
	// The agent token does not make a server.
	s2 := newHost(t, n, "u2", "127.80.205.12", "v1.37.2+k3s1")
	p2 := start(t, n, s2, []string{"K3S_TOKEN=" + agentToken}, "server", "--server=https://127.80.205.10:6443")
	if st := p2.wait(t); st != 1 || !strings.Contains(p2.log.String(), "/v1-k3s/server-bootstrap: 401 Unauthorized") {
		t.Fatalf("agent token as server token: %d\n%s", st, p2.log.String())
	}

	cs := clientFor(t, s0, "127.80.205.10")
	wantVersion := func(node, v string) {
		t.Helper()
		eventually(t, node+" at "+v, func() error {
			no, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := no.Status.NodeInfo.KubeletVersion; got != v {
				return fmt.Errorf("kubeletVersion %s", got)
			}
			return nil
		})
	}
	// Upgrade the agent: swap the binary, restart.
	pa.stop()
	install(t, a0, "v1.37.3+k3s1")
	pa = start(t, n, a0, []string{"K3S_TOKEN=" + agentToken}, "agent", "--node-name=ua", "--node-ip=127.80.205.20", "--server=https://127.80.205.10:6443")
	pa.waitReady(t)
	wantVersion("ua", "v1.37.3+k3s1")
	// A release whose binary reports another version: what the health gate sees.
	pa.stop()
	run(t, a0, "cat > /usr/local/bin/k3s", k3slite.BinaryReporting("v1.37.4+k3s1", "v1.37.9+k3s1"))
	if out := run(t, a0, "k3s --version | head -n1 | cut -d' ' -f3", nil); out != "v1.37.9+k3s1\n" {
		t.Fatalf("failing binary: %q", out)
	}
	pa = start(t, n, a0, []string{"K3S_TOKEN=" + agentToken}, "agent", "--node-name=ua", "--node-ip=127.80.205.20", "--server=https://127.80.205.10:6443")
	pa.waitReady(t)
	wantVersion("ua", "v1.37.9+k3s1")
	// A server too: its Node and its API's /version.
	p1.stop()
	install(t, s1, "v1.38.0+k3s1")
	p1 = start(t, n, s1, []string{"K3S_TOKEN=" + token, "K3S_AGENT_TOKEN=" + agentToken}, "server", "--node-name=u1", "--node-ip=127.80.205.11", "--server=https://127.80.205.10:6443", "--disable=traefik")
	p1.waitReady(t)
	wantVersion("u1", "v1.38.0+k3s1")
	if v, err := clientFor(t, s1, "127.80.205.11").Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.38.0+k3s1" {
		t.Fatalf("u1's /version: %v %v", v, err)
	}
}
