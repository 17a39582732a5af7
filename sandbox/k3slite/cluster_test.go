package k3slite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// A cluster as the provider forms it: the first server, servers joined one
// at a time (a second concurrent join refused with etcd's learner error),
// agents, refusals of bad tokens, and a deleted server's member removed.
func TestHACluster(t *testing.T) {
	opts := testOpts
	opts.PromoteDelay = -1 // learners wait for n.PromoteLearners
	n := k3slite.NewNetwork(opts)
	t.Cleanup(func() { n.Close() })
	// join starts a server that joins, and promotes it once it waits.
	join := func(h *vmhost.Host, env []string, args ...string) *proc {
		t.Helper()
		p := start(t, n, h, env, args...)
		p.waitLog(t, "Waiting for the etcd learner to be promoted")
		if got := n.PromoteLearners(); len(got) != 1 || !strings.HasPrefix(got[0], h.Hostname()+"-") {
			t.Fatalf("promoted %v", got)
		}
		p.waitReady(t)
		return p
	}
	ctx := context.Background()
	const v = "v1.37.2+k3s1"
	t0 := time.Now()
	s0 := newHost(t, n, "s0", "127.80.203.10", v)
	p0 := start(t, n, s0, []string{"K3S_TOKEN=pw0"}, "server", "--cluster-init", "--tls-san", "127.80.203.254")
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	url := "https://127.80.203.10:6443"

	// Two servers join at once: one becomes the learner, the other is refused.
	s1 := newHost(t, n, "s1", "127.80.203.11", v)
	s2 := newHost(t, n, "s2", "127.80.203.12", v)
	p1 := start(t, n, s1, []string{"K3S_TOKEN=" + token, "K3S_URL=" + url}, "server")
	p1.waitLog(t, "Waiting for the etcd learner to be promoted")
	p2 := start(t, n, s2, []string{"K3S_TOKEN=" + token}, "server", "--server", url)
	if st := p2.wait(t); st != 1 || !strings.Contains(p2.log.String(),
		`level=fatal msg="starting kubernetes: preparing server: start managed database: joining etcd cluster: etcdserver: too many learner members in cluster"`) {
		t.Fatalf("concurrent join: status %d\n%s", st, p2.log.String())
	}
	n.PromoteLearners()
	p1.waitReady(t)
	p2 = join(s2, []string{"K3S_TOKEN=" + token}, "server", "--server", url)

	// Refusals: a wrong CA hash, a wrong password.
	bad := newHost(t, n, "bad", "127.80.203.30", v)
	wrongHash := "K10" + strings.Repeat("0", 64) + "::server:pw0"
	pb := start(t, n, bad, []string{"K3S_TOKEN=" + wrongHash}, "server", "--server", url)
	hash := strings.TrimPrefix(strings.Split(token, "::")[0], "K10")
	if st := pb.wait(t); st != 1 || !strings.Contains(pb.log.String(), fmt.Sprintf(
		`level=fatal msg="starting kubernetes: preparing server: failed to validate token: token CA hash does not match the Cluster CA certificate hash: %s != %s"`, strings.Repeat("0", 64), hash)) {
		t.Fatalf("wrong hash: %d\n%s", st, pb.log.String())
	}
	pb = start(t, n, bad, []string{"K3S_TOKEN=K10" + hash + "::server:nope"}, "server", "--server", url)
	if st := pb.wait(t); st != 1 || !strings.Contains(pb.log.String(),
		`level=fatal msg="starting kubernetes: preparing server: https://127.80.203.10:6443/v1-k3s/server-bootstrap: 401 Unauthorized"`) {
		t.Fatalf("wrong password: %d\n%s", st, pb.log.String())
	}
	if !strings.Contains(p0.log.String(), "invalid username/password combination") {
		t.Errorf("the server did not log the refusal:\n%s", p0.log.String())
	}
	// An agent with a bad password retries, logging k3s's line.
	pa := start(t, n, bad, []string{"K3S_TOKEN=K10" + hash + "::server:nope", "K3S_URL=" + url}, "agent")
	pa.waitLog(t, `level=error msg="token is not valid: https://127.80.203.10:6443/v1-k3s/readyz: 401 Unauthorized"`)
	pa.stop()

	// Agents join in parallel, one with the agent token.
	a0 := newHost(t, n, "a0", "127.80.203.20", v)
	a1 := newHost(t, n, "a1", "127.80.203.21", v)
	agentToken := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/agent-token", nil))
	pa0 := start(t, n, a0, []string{"K3S_TOKEN=" + token, "K3S_URL=" + url}, "agent", "--node-label", "pool=a")
	pa1 := start(t, n, a1, []string{"K3S_TOKEN=" + agentToken, "K3S_URL=https://127.80.203.11:6443"}, "agent")
	pa0.waitReady(t)
	pa1.waitReady(t)

	t.Logf("3 servers and 2 agents ready, refusals included, in %s", time.Since(t0))
	cs := clientFor(t, s0, "127.80.203.10")
	eventually(t, "5 Ready nodes", func() error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(nodes.Items) != 5 {
			return fmt.Errorf("%d nodes", len(nodes.Items))
		}
		for _, node := range nodes.Items {
			if ready(&node) != corev1.ConditionTrue {
				return fmt.Errorf("%s not Ready", node.Name)
			}
			_, server := node.Labels["node-role.kubernetes.io/etcd"]
			if server != strings.HasPrefix(node.Name, "s") || node.Status.NodeInfo.KubeletVersion != v {
				return fmt.Errorf("%s: labels %v version %s", node.Name, node.Labels, node.Status.NodeInfo.KubeletVersion)
			}
		}
		return nil
	})
	if out := run(t, a0, `kubectl --kubeconfig /var/lib/rancher/k3s/agent/kubelet.kubeconfig get node a0 -o jsonpath='{.metadata.labels.pool}'`, nil); out != "a" {
		t.Fatalf("agent kubectl: %q", out)
	}
	// Every server serves the same API.
	if nodes, err := clientFor(t, s2, "127.80.203.12").CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil || len(nodes.Items) != 5 {
		t.Fatalf("through s2: %v", err)
	}

	// The fake kubelet runs a pod bound to a0 and deletes it once terminating.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "a0", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Running", func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	if err := cs.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod gone", func() error {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})

	// Deleting s2's Node removes its member and secret; s2 exits, and again on a restart.
	if err := cs.CoreV1().Nodes().Delete(ctx, "s2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := p2.wait(t); st != 1 || !strings.Contains(p2.log.String(), `level=fatal msg="etcd member stopped: it was removed from the etcd cluster; delete server/db to rejoin"`) {
		t.Fatalf("removed server: %d\n%s", st, p2.log.String())
	}
	if ms := n.Members("s0"); len(ms) != 2 || ms[0].Node != "s0" || ms[1].Node != "s1" || ms[1].Learner || !ms[1].Running {
		t.Fatalf("members after removal: %+v", ms)
	}
	eventually(t, "secret gone", func() error {
		_, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "s2.node-password.k3s", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	p2 = start(t, n, s2, []string{"K3S_TOKEN=" + token}, "server", "--server", url)
	if st := p2.wait(t); st != 1 || !strings.Contains(p2.log.String(), "etcd member stopped") {
		t.Fatalf("removed server restarted: %d\n%s", st, p2.log.String())
	}
	// Its datastore deleted, it joins afresh.
	run(t, s2, "rm -rf /var/lib/rancher/k3s/server/db", nil)
	p2 = join(s2, []string{"K3S_TOKEN=" + token}, "server", "--server", url)
	eventually(t, "s2 back", func() error {
		_, err := cs.CoreV1().Nodes().Get(ctx, "s2", metav1.GetOptions{})
		return err
	})
	// With two of three servers stopped the API has no quorum.
	p1.stop()
	p2.stop()
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "etcdserver: request timed out") {
		t.Fatalf("without quorum: %v", err)
	}
}

// A client certificate of another cluster is refused with 401, as the
// apiserver's authenticator does, not by the TLS handshake.
func TestForeignClientCertificate(t *testing.T) {
	n := newNetwork(t)
	a := newHost(t, n, "f0", "127.80.210.10", "v1.37.2+k3s1")
	b := newHost(t, n, "f1", "127.80.210.11", "v1.37.2+k3s1")
	start(t, n, a, []string{"K3S_TOKEN=a"}, "server", "--cluster-init").waitReady(t)
	start(t, n, b, []string{"K3S_TOKEN=b"}, "server", "--cluster-init").waitReady(t)
	// b's kubeconfig against a: the CA differs too, so trust a's.
	ca := run(t, a, "cat /var/lib/rancher/k3s/server/tls/server-ca.crt", nil)
	run(t, b, "cat > /root/a-ca.crt", []byte(ca))
	kc := run(t, b, "cat /etc/rancher/k3s/k3s.yaml", nil)
	kc = strings.Replace(kc, "server: https://127.0.0.1:6443", "server: https://127.80.210.10:6443", 1)
	i := strings.Index(kc, "certificate-authority-data:")
	j := strings.Index(kc[i:], "\n")
	kc = kc[:i] + "certificate-authority: /root/a-ca.crt" + kc[i+j:]
	run(t, b, "cat > /root/a.yaml", []byte(kc))
	_, errOut, st := sh(b, "kubectl --kubeconfig /root/a.yaml get nodes", nil)
	if st != 1 || errOut != "error: You must be logged in to the server (Unauthorized)\n" {
		t.Fatalf("foreign certificate: %d %q", st, errOut)
	}
}

// An agent keeps its Lease renewed through another server when the one
// it joined through stops (k3s's agent load balancer).
func TestAgentLoadBalancer(t *testing.T) {
	n := newNetwork(t)
	ctx := context.Background()
	s0 := newHost(t, n, "b0", "127.80.211.10", "v1.37.2+k3s1")
	p0 := start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init")
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	url := "https://127.80.211.10:6443"
	for i, name := range []string{"b1", "b2"} {
		h := newHost(t, n, name, fmt.Sprintf("127.80.211.%d", 11+i), "v1.37.2+k3s1")
		start(t, n, h, []string{"K3S_TOKEN=" + token, "K3S_URL=" + url}, "server").waitReady(t)
	}
	a := newHost(t, n, "ba", "127.80.211.20", "v1.37.2+k3s1")
	pa := start(t, n, a, []string{"K3S_TOKEN=" + token, "K3S_URL=" + url}, "agent")
	pa.waitReady(t)
	p0.stop()
	stopped := time.Now()
	cs := clientFor(t, s0, "127.80.211.11")
	eventually(t, "lease renewed after the stop", func() error {
		l, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "ba", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(stopped) {
			return fmt.Errorf("renewed at %s", l.Spec.RenewTime)
		}
		return nil
	})
	pa.waitLog(t, "Load balancer k3s-agent-load-balancer now uses server 127.80.211.")
}
