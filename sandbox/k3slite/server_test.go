package k3slite_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVersion(t *testing.T) {
	n := newNetwork(t)
	h := newHost(t, n, "v0", "127.80.201.10", "v1.37.3+k3s1")
	out := run(t, h, "k3s --version", nil)
	want := fmt.Sprintf("k3s version v1.37.3+k3s1 (%s)\ngo version %s\n", commit("v1.37.3+k3s1"), runtime.Version())
	if out != want {
		t.Fatalf("k3s --version = %q, want %q", out, want)
	}
	// Through the #! line, under another name.
	run(t, h, "cp /usr/local/bin/k3s /root/k3s-next && chmod 755 /root/k3s-next", nil)
	if out := run(t, h, "/root/k3s-next -v | head -n1 | cut -d' ' -f3", nil); out != "v1.37.3+k3s1\n" {
		t.Fatalf("via #!: %q", out)
	}
	if string(k3sBinary("v1.37.3+k3s1")) == string(k3sBinary("v1.37.4+k3s1")) {
		t.Fatal("two versions, one binary")
	}
}

func commit(v string) string {
	s := sha256.Sum256([]byte(v))
	return hex.EncodeToString(s[:4])
}

func TestServerClusterInit(t *testing.T) {
	n := newNetwork(t)
	h := newHost(t, n, "cp-0", "127.80.202.10", "v1.37.2+k3s1")
	run(t, h, "mkdir -p /etc/rancher/k3s && printf 'node-label:\\n  - tier=one\\n' > /etc/rancher/k3s/config.yaml", nil)
	p := start(t, n, h, []string{"K3S_TOKEN=s3cret", "K3S_KUBECONFIG_MODE=0644"},
		"server", "--cluster-init", "--node-ip", "127.80.202.10", "--tls-san", "127.80.202.254", "--disable", "traefik", "--cluster-cidr", "10.42.0.0/16")
	p.waitReady(t)
	for _, line := range []string{"Starting k3s v1.37.2+k3s1", "ETCD server is now running", "Kube API server is now running", "k3s is up and running"} {
		if !strings.Contains(p.log.String(), line) {
			t.Errorf("log lacks %q", line)
		}
	}
	token := strings.TrimSpace(run(t, h, "cat /var/lib/rancher/k3s/server/token", nil))
	ca := run(t, h, "cat /var/lib/rancher/k3s/server/tls/server-ca.crt", nil)
	sum := sha256.Sum256([]byte(ca))
	if want := "K10" + hex.EncodeToString(sum[:]) + "::server:s3cret"; token != want {
		t.Fatalf("token %q, want %q", token, want)
	}
	if l := run(t, h, "readlink /var/lib/rancher/k3s/server/node-token; readlink /var/lib/rancher/k3s/server/agent-token", nil); l != "/var/lib/rancher/k3s/server/token\n/var/lib/rancher/k3s/server/token\n" {
		t.Fatalf("links: %q", l)
	}
	for file, mode := range map[string]string{
		"/var/lib/rancher/k3s/server/token": "-rw-------", "/etc/rancher/k3s/k3s.yaml": "-rw-r--r--",
		"/etc/rancher/node/password": "-rw-------", "/var/lib/rancher/k3s/server/cred/passwd": "-rw-------",
	} {
		fi, err := fsStat(h, file)
		if err != nil {
			t.Fatal(err)
		}
		if fi != mode {
			t.Errorf("%s: mode %s, want %s", file, fi, mode)
		}
	}
	kc := run(t, h, "cat /etc/rancher/k3s/k3s.yaml", nil)
	for _, s := range []string{"server: https://127.0.0.1:6443", "name: default", "current-context: default"} {
		if !strings.Contains(kc, s) {
			t.Errorf("kubeconfig lacks %q:\n%s", s, kc)
		}
	}
	cs := clientFor(t, h, "127.80.202.10")
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Get(ctx, "cp-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.KubeletVersion != "v1.37.2+k3s1" || node.Labels["tier"] != "one" ||
		node.Labels["node-role.kubernetes.io/control-plane"] != "true" || node.Labels["node-role.kubernetes.io/etcd"] != "true" || node.Labels["node-role.kubernetes.io/master"] != "true" {
		t.Fatalf("node: version %q labels %v", node.Status.NodeInfo.KubeletVersion, node.Labels)
	}
	if ready(node) != corev1.ConditionTrue {
		t.Fatalf("node not Ready: %v", node.Status.Conditions)
	}
	if a := node.Status.Addresses; len(a) != 2 || a[0].Address != "127.80.202.10" || a[1].Address != "cp-0" {
		t.Fatalf("addresses %v", a)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "cp-0.node-password.k3s", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "cp-0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// The provider's readiness probe, as its node status script runs it.
	if out := run(t, h, `/usr/local/bin/k3s kubectl --kubeconfig="/etc/rancher/k3s/k3s.yaml" --request-timeout=5s get node "cp-0" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'`, nil); out != "True" {
		t.Fatalf("kubectl jsonpath: %q", out)
	}
	if out := run(t, h, `kubectl get nodes`, nil); !regexp.MustCompile(`^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\ncp-0\s+Ready\s+control-plane,etcd,master\s+\S+\s+v1.37.2\+k3s1\n$`).MatchString(out) {
		t.Fatalf("kubectl get nodes:\n%s", out)
	}
	out, errOut, st := sh(h, `k3s kubectl get node nope -o jsonpath='{.metadata.name}'`, nil)
	if st != 1 || out != "" || errOut != "Error from server (NotFound): nodes \"nope\" not found\n" {
		t.Fatalf("missing node: %d %q %q", st, out, errOut)
	}
	var out2, errOut2 strings.Builder
	if st, _ := h.Run(context.Background(), "k3s kubectl --kubeconfig /var/lib/rancher/k3s/server/cred/admin.kubeconfig get nodes", nil, &out2, &errOut2, nil, "alice"); st != 1 ||
		errOut2.String() != "error: error loading config file \"/var/lib/rancher/k3s/server/cred/admin.kubeconfig\": open /var/lib/rancher/k3s/server/cred/admin.kubeconfig: permission denied\n" {
		t.Fatalf("kubectl as a user: %d %q", st, errOut2.String())
	}
	if out := run(t, h, `k3s kubectl get --raw /readyz`, nil); out != "ok" {
		t.Fatalf("readyz: %q", out)
	}
	if _, errOut, st := sh(h, `k3s kubectl delete node cp-0`, nil); st != 1 || !strings.Contains(errOut, "only implements") {
		t.Fatalf("unsupported: %d %q", st, errOut)
	}
	// A stop ends it with status 0; a start again reuses the datastore.
	if st := p.stop(); st != 0 {
		t.Fatalf("stop: status %d\n%s", st, p.log.String())
	}
	if _, errOut, st := sh(h, `k3s kubectl get nodes`, nil); st != 1 || !strings.Contains(errOut, "The connection to the server 127.0.0.1:6443 was refused") {
		t.Fatalf("stopped: %d %q", st, errOut)
	}
	p2 := start(t, n, h, []string{"K3S_TOKEN=s3cret"}, "server", "--cluster-init", "--node-ip", "127.80.202.10")
	p2.waitReady(t)
	if !strings.Contains(p2.log.String(), "Managed etcd cluster bootstrap already complete and initialized") {
		t.Errorf("restart log:\n%s", p2.log.String())
	}
	if got := strings.TrimSpace(run(t, h, "cat /var/lib/rancher/k3s/server/token", nil)); got != token {
		t.Fatalf("token changed on restart: %q", got)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "cp-0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// A restart with another token is refused.
	p2.stop()
	p3 := start(t, n, h, []string{"K3S_TOKEN=other"}, "server")
	if st := p3.wait(t); st != 1 || !strings.Contains(p3.log.String(), `level=fatal msg="starting kubernetes: preparing server: failed to bootstrap cluster data: failed to reconcile with local datastore: bootstrap data already found and encrypted with different token"`) {
		t.Fatalf("other token: status %d\n%s", st, p3.log.String())
	}
}

func ready(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
