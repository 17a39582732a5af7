package clienttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/openctl/openctl/sandbox/kubelite/kubelitetest"
)

// kubectl runs the real kubectl command in process against s.
func kubectl(t *testing.T, s *kubelitetest.Server, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: s.Config.Host, CertificateAuthorityData: s.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: s.Config.CertData, ClientKeyData: s.Config.KeyData}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin"}
	cfg.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	var fatal error
	cmdutil.BehaviorOnFatal(func(msg string, code int) { fatal = fmt.Errorf("exit %d: %s", code, msg) })
	defer cmdutil.DefaultBehaviorOnFatal()
	all := append([]string{"kubectl", "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}, args...)
	c := cmd.NewKubectlCommand(cmd.KubectlOptions{Arguments: all, IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}})
	c.SetArgs(all[1:])
	c.SetOut(&out)
	c.SetErr(&errOut)
	err := c.Execute()
	if err == nil {
		err = fatal
	}
	if errOut.Len() > 0 {
		t.Logf("kubectl %s: stderr:\n%s", strings.Join(args, " "), &errOut)
	}
	return out.String(), err
}

func TestKubectl(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	os.Unsetenv("KUBECONFIG")
	s := kubelitetest.Start(t, nil)
	ctx := context.Background()
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "server-1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/master": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-1"}},
	} {
		n.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2+k3s1", OSImage: "Ubuntu 24.04 LTS", KernelVersion: "6.8.0-31-generic", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.0.5-k3s1"}}
		if _, err := s.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := runningPod("web", "agent-1", nil)
	created, err := s.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = p.Status
	if _, err := s.Client.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	out, err := kubectl(t, s, "get", "nodes", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME`,
		`agent-1\s+Ready\s+<none>\s+\d+s\s+v1.37.2\+k3s1\s+192.168.1.10\s+<none>\s+Ubuntu 24.04 LTS\s+6.8.0-31-generic \(amd64\)\s+containerd://2.0.5-k3s1`,
		`server-1\s+Ready\s+control-plane,master\s+\d+s\s+v1.37.2\+k3s1`,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("kubectl get nodes -o wide:\n%s", out)
	}
	for i, re := range want {
		if !regexp.MustCompile("^" + re).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %q", i, lines[i], re)
		}
	}

	if out, err = kubectl(t, s, "cordon", "agent-1"); err != nil || strings.TrimSpace(out) != "node/agent-1 cordoned" {
		t.Fatalf("kubectl cordon: %v %q", err, out)
	}
	if out, err = kubectl(t, s, "get", "node", "agent-1"); err != nil || !regexp.MustCompile(`agent-1\s+Ready,SchedulingDisabled\s+<none>`).MatchString(out) {
		t.Fatalf("kubectl get node after cordon: %v\n%s", err, out)
	}

	// drain: the pod is evicted; a kubelet finishes its termination.
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.Client.CoreV1().Pods("").Watch(kctx, metav1.ListOptions{FieldSelector: "spec.nodeName=agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if p, ok := e.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
				_ = s.Client.CoreV1().Pods(p.Namespace).Delete(kctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
			}
		}
	}()
	out, err = kubectl(t, s, "drain", "agent-1", "--ignore-daemonsets", "--force", "--timeout=30s")
	cancel()
	<-done
	if err != nil || !strings.Contains(out, "pod/web evicted") || !strings.Contains(out, "node/agent-1 drained") {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}

	if out, err = kubectl(t, s, "get", "pods", "-A"); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("kubectl get pods -A after the drain: %v %q", err, out)
	}
	if out, err = kubectl(t, s, "get", "--raw", "/version"); err != nil || !strings.Contains(out, `"gitVersion": "v1.37.2+k3s1"`) {
		t.Fatalf("kubectl get --raw /version: %v %q", err, out)
	}
	if out, err = kubectl(t, s, "api-resources"); err != nil || !regexp.MustCompile(`(?m)^pods\s+po\s+v1\s+true\s+Pod$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^leases\s+coordination.k8s.io/v1\s+true\s+Lease$`).MatchString(out) {
		t.Fatalf("kubectl api-resources: %v\n%s", err, out)
	}
}
