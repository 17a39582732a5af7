package kubelite_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/internal/drain"
)

// ageColumns are ages in kubectl's tables ("3s", "2m10s").
var ageColumns = regexp.MustCompile(`\b[0-9]+[smhd]([0-9]+[smh])?\b`)

// kubeconfigFile writes a kubeconfig for cfg (certificate data inline).
func kubeconfigFile(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// providerCalls makes the Kubernetes calls the K3s provider makes — node
// get and list, cordon, drain and uncordon with its drain, the
// kube-vip Lease read and handed over, a node deleted — and returns what
// each answered, normalized.
func providerCalls(t *testing.T, cfg *rest.Config) []string {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	note := func(what string, v any, err error) {
		b, _ := json.Marshal(v)
		s := what + ": " + string(b)
		if err != nil {
			s += " error: " + err.Error()
			if se, ok := err.(apierrors.APIStatus); ok {
				s += " reason: " + string(se.Status().Reason)
			}
		}
		out = append(out, normalize(s))
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "p1", metav1.GetOptions{})
	note("get p1", node.Spec, err)
	_, err = cs.CoreV1().Nodes().Get(ctx, "absent", metav1.GetOptions{})
	note("get absent", nil, err)
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	var names []string
	for _, n := range list.Items {
		if n.Name == "ref" {
			continue // the stand-in's own node
		}
		names = append(names, n.Name+"="+string(n.Status.NodeInfo.KubeletVersion))
	}
	note("list", names, err)
	err = drain.Cordon(ctx, cs, "p1")
	note("cordon", nil, err)
	node, err = cs.CoreV1().Nodes().Get(ctx, "p1", metav1.GetOptions{})
	note("cordoned", node.Spec.Unschedulable, err)
	_, err = drain.Drain(ctx, cs, "p1", drain.Options{Force: true, IgnoreDaemonSets: true, DeleteEmptyDirData: true, Timeout: 20 * time.Second})
	note("drain", nil, err)
	err = drain.Uncordon(ctx, cs, "p1")
	note("uncordon", nil, err)
	leases := cs.CoordinationV1().Leases("kube-system")
	holder := "p1"
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "plndr-cp-lock"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	note("lease create", l.Spec.HolderIdentity, err)
	l, err = leases.Get(ctx, "plndr-cp-lock", metav1.GetOptions{})
	note("lease get", l.Spec.HolderIdentity, err)
	next := "p2"
	l.Spec.HolderIdentity = &next
	l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	note("lease handed over", l.Spec.HolderIdentity, err)
	stale := l.DeepCopy()
	stale.ResourceVersion = "1"
	_, err = leases.Update(ctx, stale, metav1.UpdateOptions{})
	note("lease stale update", nil, err)
	err = cs.CoreV1().Nodes().Delete(ctx, "p2", metav1.DeleteOptions{})
	note("delete p2", nil, err)
	err = cs.CoreV1().Nodes().Delete(ctx, "p2", metav1.DeleteOptions{})
	note("delete p2 again", nil, err)
	return out
}

// seedNodes creates two Ready nodes, p1 and p2, as k3s's nodes register.
func seedNodes(t *testing.T, cfg *rest.Config) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p1", "p2"} {
		n, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": "true"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.37.2+k3s1", OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0", ContainerRuntimeVersion: "containerd://2.1.5-k3s1", Architecture: "amd64", OperatingSystem: "linux"}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: name}}
		if n, err = cs.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The node lifecycle controller lifts the not-ready taint the
		// API server put on the new node once it is Ready (on the
		// stand-in its own loop does).
		n.Spec.Taints = nil
		if _, err := cs.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

var spaces = regexp.MustCompile(` {2,}`)

// withoutRef drops the stand-in's node from kubectl's output and the
// column padding that its wider ROLES made.
func withoutRef(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "ref ") {
			out = append(out, spaces.ReplaceAllString(l, "  "))
		}
	}
	return strings.Join(out, "\n")
}

// TestDifferentialClients: the real kubectl (the k3s stand-in's, as k3s
// embeds it) and the K3s provider's client-go calls get the same answers
// from kubelite as from the real kube-apiserver.
func TestDifferentialClients(t *testing.T) {
	ref := startStandin(t)
	c := newCluster(t)
	// The stand-in's own node, "ref", registered by its kubelet, is left
	// out of the comparison (withoutRef).
	for _, cfg := range []*rest.Config{ref, c.config} {
		seedNodes(t, cfg)
	}

	kubectl := filepath.Join(t.TempDir(), "kubectl")
	if err := os.Symlink(os.Getenv("K3S_STANDIN_BINARY"), kubectl); err != nil {
		t.Fatal(err)
	}
	kubeconfigs := []string{kubeconfigFile(t, ref), kubeconfigFile(t, c.config)}
	for _, args := range [][]string{
		{"get", "nodes"},
		{"get", "nodes", "-o", "wide"},
		{"get", "node", "p1", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"},
		{"get", "node", "absent"},
		{"cordon", "p1"},
		{"get", "nodes"},
		{"drain", "p1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s"},
		{"uncordon", "p1"},
		{"get", "pods", "-A"},
		{"get", "leases", "-n", "kube-system", "absent"},
	} {
		var got [2]string
		for i, kc := range kubeconfigs {
			b, err := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", kc}, args...)...).CombinedOutput()
			got[i] = normalize(string(b))
			if err != nil {
				got[i] += "\nexit: " + err.Error()
			}
			got[i] = withoutRef(ageColumns.ReplaceAllString(got[i], "AGE"))
		}
		if got[0] != got[1] {
			t.Errorf("kubectl %s\nreal:\n%s\nkubelite:\n%s", strings.Join(args, " "), got[0], got[1])
		}
	}

	want, got := providerCalls(t, ref), providerCalls(t, c.config)
	if len(want) != len(got) {
		t.Fatalf("calls: real %d, kubelite %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("provider call %d\nreal:     %s\nkubelite: %s", i, want[i], got[i])
		}
	}
}
