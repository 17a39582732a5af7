package k3slite_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/sandbox/k3slite"
)

// A stopped agent turns NotReady (conditions Unknown, unreachable taints)
// once its Lease is older than the grace period, and Ready again when it
// comes back; a second host with the same node name and another node
// password is refused with k3s's message.
func TestNodeLifecycleAndDuplicateName(t *testing.T) {
	opts := testOpts
	opts.HeartbeatInterval = 100 * time.Millisecond
	opts.NodeMonitorGracePeriod = 700 * time.Millisecond
	n := k3slite.NewNetwork(opts)
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	s0 := newHost(t, n, "l0", "127.80.207.10", "v1.37.2+k3s1")
	start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init").waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	a0 := newHost(t, n, "la", "127.80.207.20", "v1.37.2+k3s1")
	env := []string{"K3S_TOKEN=" + token, "K3S_URL=https://127.80.207.10:6443"}
	pa := start(t, n, a0, env, "agent")
	pa.waitReady(t)
	cs := clientFor(t, s0, "127.80.207.10")
	state := func(want corev1.ConditionStatus, taint bool) func() error {
		return func() error {
			no, err := cs.CoreV1().Nodes().Get(ctx, "la", metav1.GetOptions{})
			if err != nil {
				return err
			}
			has := slices.ContainsFunc(no.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "node.kubernetes.io/unreachable" })
			if ready(no) != want || has != taint {
				return fmt.Errorf("Ready %s, unreachable taint %v", ready(no), has)
			}
			return nil
		}
	}
	pa.stop()
	eventually(t, "NotReady", state(corev1.ConditionUnknown, true))
	pa = start(t, n, a0, env, "agent")
	pa.waitReady(t)
	eventually(t, "Ready again", state(corev1.ConditionTrue, false))

	dup := newHost(t, n, "la-twin", "127.80.207.21", "v1.37.2+k3s1")
	pd := start(t, n, dup, env, "agent", "--node-name", "la")
	pd.waitLog(t, `level=info msg="Waiting to retrieve agent configuration; server is not ready: Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag"`)
	pd.stop()
}

// Without quorum a restarted server waits (as over etcd); Close ends it
// and every other program, and waits for them.
func TestCloseEndsPrograms(t *testing.T) {
	n := k3slite.NewNetwork(testOpts)
	s0 := newHost(t, n, "c0", "127.80.212.10", "v1.37.2+k3s1")
	s1 := newHost(t, n, "c1", "127.80.212.11", "v1.37.2+k3s1")
	p0 := start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init")
	p0.waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	p1 := start(t, n, s1, []string{"K3S_TOKEN=" + token}, "server", "--server=https://127.80.212.10:6443")
	p1.waitReady(t)
	p0.stop()
	p1.stop()
	p0 = start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server")
	p0.waitLog(t, "ETCD server is now running")
	select {
	case <-p0.ready:
		t.Fatal("ready without quorum")
	default:
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if st := p0.wait(t); st != 0 {
		t.Fatalf("status %d after Close", st)
	}
	if _, errOut, st := sh(s0, "k3s --version", nil); st != 1 || errOut != "k3slite: the sandbox network is closed\n" {
		t.Fatalf("after Close: %d %q", st, errOut)
	}
}
