package k3slite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openctl/openctl/internal/drain"
)

// The provider's drain completes on a node of the
// light k3s: eviction marks the pods terminating, the fake kubelet
// deletes them.
func TestDrain(t *testing.T) {
	n := newNetwork(t)
	ctx := context.Background()
	s0 := newHost(t, n, "d0", "127.80.209.10", "v1.37.2+k3s1")
	start(t, n, s0, []string{"K3S_TOKEN=pw"}, "server", "--cluster-init").waitReady(t)
	token := strings.TrimSpace(run(t, s0, "cat /var/lib/rancher/k3s/server/token", nil))
	a0 := newHost(t, n, "da", "127.80.209.20", "v1.37.2+k3s1")
	start(t, n, a0, []string{"K3S_TOKEN=" + token, "K3S_URL=https://127.80.209.10:6443"}, "agent").waitReady(t)
	cs := clientFor(t, s0, "127.80.209.10")
	for _, name := range []string{"p1", "p2"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "da", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "da", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := drain.Cordon(ctx, cs, node.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := drain.Drain(ctx, cs, "da", drain.Options{Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true, Timeout: 20 * time.Second}); err != nil {
		t.Fatalf("drain: %v", err)
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods left: %v %v", pods, err)
	}
	if node, _ := cs.CoreV1().Nodes().Get(ctx, "da", metav1.GetOptions{}); !node.Spec.Unschedulable {
		t.Fatal("not cordoned")
	}
	if out := run(t, s0, "kubectl get nodes", nil); !strings.Contains(out, "Ready,SchedulingDisabled") {
		t.Fatalf("kubectl get nodes:\n%s", out)
	}
}
