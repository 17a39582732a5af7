package standin

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// kubeVIPDaemonSet is shaped like the manifest the K3s provider writes
// (k3s/kubevip.go): RBAC documents, then the DaemonSet; env is the
// container's env list, indented for it.
func kubeVIPDaemonSet(env string) string {
	return `# a comment
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-vip
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:kube-vip-role
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["list", "get", "watch", "update", "create"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-vip-ds
  namespace: kube-system
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: kube-vip-ds
  template:
    metadata:
      labels:
        app.kubernetes.io/name: kube-vip-ds
    spec:
      hostNetwork: true
      containers:
        - name: kube-vip
          image: ghcr.io/kube-vip/kube-vip:v0.8.9
          args: ["manager"]
          env:
` + env
}

const providerEnv = `            - name: address
              value: "10.0.0.100"
            - name: port
              value: "6443"
            - name: vip_interface
              value: "eth0"
            - name: vip_arp
              value: "true"
            - name: vip_subnet
              value: "32"
            - name: cp_enable
              value: "true"
            - name: cp_namespace
              value: "kube-system"
            - name: vip_leaderelection
              value: "true"
            - name: vip_leasename
              value: "plndr-cp-lock"
            - name: vip_leaseduration
              value: "5"
            - name: vip_renewdeadline
              value: "3"
            - name: vip_retryperiod
              value: "1"
`

const staticPod = `apiVersion: v1
kind: Pod
metadata:
  name: kube-vip
  namespace: kube-system
spec:
  hostNetwork: true
  containers:
  - name: kube-vip
    image: ghcr.io/kube-vip/kube-vip:v0.8.0
    args:
    - manager
    env:
    - name: vip_address
      value: fd00::10
    - name: vip_cidr
      value: "64"
    - name: cp_enable
      value: "true"
    - name: vip_leaderelection
      value: "true"
    - name: vip_nodename
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: vip_leaseduration
      value: "15"
    - name: vip_renewdeadline
      value: "10"
    - name: vip_retryperiod
      value: "2"
`

func TestParseKubeVIP(t *testing.T) {
	provider := KubeVIPConfig{
		Address: netip.MustParseAddr("10.0.0.100"), Subnet: 32, Port: 6443, Interface: "eth0",
		ARP: true, ControlPlane: true, Namespace: "kube-system", LeaderElection: true,
		LeaseName: "plndr-cp-lock", LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
	}
	for _, c := range []struct {
		name    string
		yaml    string
		want    KubeVIPConfig
		wantErr string // "" for success; ErrNoKubeVIP's text for none
	}{
		{name: "provider's DaemonSet", yaml: kubeVIPDaemonSet(providerEnv), want: provider},
		{name: "defaults", yaml: kubeVIPDaemonSet("            - {name: address, value: 192.168.1.5}\n"), want: KubeVIPConfig{
			Address: netip.MustParseAddr("192.168.1.5"), Subnet: 32, Port: 6443, Namespace: "kube-system",
			LeaseName: "plndr-cp-lock", LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
		}},
		{name: "static pod, IPv6, aliases, valueFrom ignored", yaml: staticPod, want: KubeVIPConfig{
			Address: netip.MustParseAddr("fd00::10"), Subnet: 64, Port: 6443, ControlPlane: true, LeaderElection: true,
			Namespace: "kube-system", LeaseName: "plndr-cp-lock",
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		}},
		{name: "JSON", yaml: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"x","image":"kube-vip:1","args":["manager"],"env":[{"name":"address","value":"10.1.1.1"},{"name":"svc_enable","value":"true"}]}]}}`,
			want: KubeVIPConfig{Address: netip.MustParseAddr("10.1.1.1"), Subnet: 32, Port: 6443, Services: true, Namespace: "kube-system",
				LeaseName: "plndr-cp-lock", LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}},
		{name: "other manifests only", yaml: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n", wantErr: ErrNoKubeVIP.Error()},
		{name: "empty", yaml: "", wantErr: ErrNoKubeVIP.Error()},
		{name: "kube-vip image without manager", yaml: strings.Replace(kubeVIPDaemonSet(providerEnv), `args: ["manager"]`, `args: ["manifest", "daemonset"]`, 1), wantErr: ErrNoKubeVIP.Error()},
		{name: "manager of another image", yaml: strings.Replace(kubeVIPDaemonSet(providerEnv), "ghcr.io/kube-vip/kube-vip:v0.8.9", "nginx", 1), wantErr: ErrNoKubeVIP.Error()},
		{name: "no address", yaml: kubeVIPDaemonSet("            - {name: vip_arp, value: \"true\"}\n"), wantErr: "address is not set"},
		{name: "DNS address", yaml: kubeVIPDaemonSet("            - {name: address, value: vip.example}\n"), wantErr: `address "vip.example" is not an IP address`},
		{name: "bad subnet", yaml: kubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_subnet, value: \"33\"}\n"), wantErr: `vip_subnet "33"`},
		{name: "bad bool", yaml: kubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_arp, value: \"yes please\"}\n"), wantErr: `vip_arp "yes please"`},
		{name: "bad port", yaml: kubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: port, value: \"0\"}\n"), wantErr: `port "0"`},
		{name: "lease not longer than renew deadline", yaml: kubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_leaseduration, value: \"3\"}\n"), wantErr: "must be longer than vip_renewdeadline"},
		{name: "renew deadline too short for the retry period", yaml: kubeVIPDaemonSet("            - {name: address, value: 10.0.0.1}\n            - {name: vip_retryperiod, value: \"3\"}\n"), wantErr: "1.2 × vip_retryperiod"},
		{name: "broken YAML", yaml: "kind: [\n", wantErr: "document 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseKubeVIP([]byte(c.yaml))
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				assert.Equal(t, c.wantErr == ErrNoKubeVIP.Error(), errors.Is(err, ErrNoKubeVIP), "errors.Is(err, ErrNoKubeVIP): %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	cfg, err := ParseKubeVIP([]byte(kubeVIPDaemonSet(providerEnv)))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.100/32", cfg.Prefix().String())
}

// FuzzParseKubeVIP: no input panics, and a configuration returned is one
// client-go's leader election accepts.
func FuzzParseKubeVIP(f *testing.F) {
	f.Add([]byte(kubeVIPDaemonSet(providerEnv)))
	f.Add([]byte(staticPod))
	f.Add([]byte("---\n---\nkind: Pod\n"))
	f.Add([]byte(`{"kind":"DaemonSet","spec":{"template":{"spec":{"containers":[{"image":"kube-vip","args":["manager"],"env":[{"name":"address","value":"::ffff:10.0.0.1"}]}]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseKubeVIP(data)
		if err != nil {
			return
		}
		if !cfg.Address.IsValid() || cfg.Subnet < 0 || cfg.Subnet > cfg.Address.BitLen() {
			t.Fatalf("bad VIP %v/%d", cfg.Address, cfg.Subnet)
		}
		if cfg.LeaseDuration <= cfg.RenewDeadline || float64(cfg.RenewDeadline) <= 1.2*float64(cfg.RetryPeriod) || cfg.RetryPeriod <= 0 {
			t.Fatalf("timings client-go refuses: %+v", cfg)
		}
	})
}

func TestManifestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.yaml", "a.yml", "c.json", "d.txt", "e.yaml.skip"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub.yaml", "f.YAML"), nil, 0o600))
	got, err := manifestFiles(dir)
	require.NoError(t, err)
	var names []string
	for _, p := range got {
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		names = append(names, rel)
	}
	assert.Equal(t, []string{"a.yml", "b.yaml", "c.json", filepath.Join("sub.yaml", "f.YAML")}, names)
	_, err = manifestFiles(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchManifestsWithoutInterface runs the emulation against a fake API
// where the VIP's interface does not exist (and the test need not be
// root): the manifest is picked up after start, the node wins the Lease,
// adding the VIP fails with one logged error and is retried without
// crashing; a changed manifest restarts the emulation, a removed one stops
// it and releases the Lease; the watcher returns when its context ends.
func TestWatchManifestsWithoutInterface(t *testing.T) {
	dir := t.TempDir()
	client := fake.NewClientset()
	var logs syncBuffer
	log := newLogger(&logs)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchManifests(ctx, dir, "node-a", net.IPv4(192, 0, 2, 10), client, log)
	}()
	t.Cleanup(func() { cancel(); <-done })

	holder := func() string {
		l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "plndr-cp-lock", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	env := strings.ReplaceAll(providerEnv, `"eth0"`, `"openctl-none0"`)
	// Written after the watcher started, with another manifest beside it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vip.yaml"), []byte(kubeVIPDaemonSet(env)), 0o600))
	require.Eventually(t, func() bool { return holder() == "node-a" }, 20*time.Second, 50*time.Millisecond, "the Lease goes to node-a\n%s", &logs)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "kube-vip: vip_interface openctl-none0: ")
	}, 10*time.Second, 50*time.Millisecond, "%s", &logs)
	out := logs.String()
	assert.Contains(t, out, "Recorded manifest "+filepath.Join(dir, "other.yaml"))
	assert.Contains(t, out, `msg="kube-vip: this node is the leader, adding 10.0.0.100/32 to openctl-none0"`)
	assert.Contains(t, out, "level=error")
	// Retried every second, logged once.
	var retries atomic.Int64
	count := func(msg string) {
		if strings.HasPrefix(msg, "vip_interface openctl-none0: ") {
			retries.Add(1)
		}
	}
	kubeVIPFailed.Store(&count)
	defer kubeVIPFailed.Store(nil)
	require.Eventually(t, func() bool { return retries.Load() >= 2 }, 10*time.Second, 50*time.Millisecond, "two more retries")
	assert.Equal(t, 1, strings.Count(logs.String(), "kube-vip: vip_interface openctl-none0: "), "%s", &logs)

	// A changed VIP restarts the emulation.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vip.yaml"), []byte(strings.ReplaceAll(kubeVIPDaemonSet(env), "10.0.0.100", "10.0.0.101")), 0o600))
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "adding 10.0.0.101/32 to openctl-none0")
	}, 20*time.Second, 50*time.Millisecond, "%s", &logs)
	assert.Contains(t, logs.String(), "kube-vip: configuration removed or changed; stopping")
	assert.Equal(t, "node-a", holder())

	// Edited into an invalid manifest: logged, and the emulation keeps
	// running with what it had (no restart).
	restarts := strings.Count(logs.String(), "kube-vip: starting from")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vip.yaml"), []byte(strings.ReplaceAll(kubeVIPDaemonSet(env), "10.0.0.100", "10.0.0.300")), 0o600))
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "keeping the configuration read before")
	}, 10*time.Second, 50*time.Millisecond, "%s", &logs)
	assert.Contains(t, logs.String(), `address \"10.0.0.300\" is not an IP address`)
	assert.Equal(t, restarts, strings.Count(logs.String(), "kube-vip: starting from"), "%s", &logs)
	assert.Equal(t, 1, strings.Count(logs.String(), "kube-vip: configuration removed or changed; stopping"), "%s", &logs)

	// Removed: stopped, the Lease released (client-go's release empties
	// the holder).
	require.NoError(t, os.Remove(filepath.Join(dir, "vip.yaml")))
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "Manifest "+filepath.Join(dir, "vip.yaml")+" removed") && holder() == ""
	}, 10*time.Second, 50*time.Millisecond, "%s", &logs)

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watchManifests did not return after its context ended")
	}
}
