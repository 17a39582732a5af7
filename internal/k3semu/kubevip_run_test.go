package k3semu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	"github.com/openctl/openctl/internal/k3semu/k3semutest"
)

func TestManifestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.yaml", "a.yml", "c.json", "d.txt", "e.yaml.skip"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub.yaml", "f.YAML"), nil, 0o600))
	got, err := manifestFiles(OSFS{}, dir)
	require.NoError(t, err)
	var names []string
	for _, p := range got {
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		names = append(names, rel)
	}
	assert.Equal(t, []string{"a.yml", "b.yaml", "c.json", filepath.Join("sub.yaml", "f.YAML")}, names)
	_, err = manifestFiles(OSFS{}, filepath.Join(dir, "missing"))
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
	log := NewLogger(&logs)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	var failed atomic.Pointer[func(string)]
	w := &KubeVIPWatch{FS: OSFS{}, Dir: dir, Node: "node-a", NodeIP: net.IPv4(192, 0, 2, 10), Client: client, Log: log,
		Net: missingIfaceNet{}, Poll: time.Second,
		Failed: func(msg string) {
			if f := failed.Load(); f != nil {
				(*f)(msg)
			}
		}}
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	holder := func() string {
		l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "plndr-cp-lock", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	env := strings.ReplaceAll(k3semutest.ProviderEnv, `"eth0"`, `"openctl-none0"`)
	// Written after the watcher started, with another manifest beside it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vip.yaml"), []byte(k3semutest.KubeVIPDaemonSet(env)), 0o600))
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
	failed.Store(&count)
	require.Eventually(t, func() bool { return retries.Load() >= 2 }, 10*time.Second, 50*time.Millisecond, "two more retries")
	assert.Equal(t, 1, strings.Count(logs.String(), "kube-vip: vip_interface openctl-none0: "), "%s", &logs)

	// A changed VIP restarts the emulation.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vip.yaml"), []byte(strings.ReplaceAll(k3semutest.KubeVIPDaemonSet(env), "10.0.0.100", "10.0.0.101")), 0o600))
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "adding 10.0.0.101/32 to openctl-none0")
	}, 20*time.Second, 50*time.Millisecond, "%s", &logs)
	assert.Contains(t, logs.String(), "kube-vip: configuration removed or changed; stopping")
	assert.Equal(t, "node-a", holder())

	// Edited into an invalid manifest: logged, and the emulation keeps
	// running with what it had (no restart).
	restarts := strings.Count(logs.String(), "kube-vip: starting from")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vip.yaml"), []byte(strings.ReplaceAll(k3semutest.KubeVIPDaemonSet(env), "10.0.0.100", "10.0.0.300")), 0o600))
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
		t.Fatal("Run did not return after its context ended")
	}
}

// missingIfaceNet is a host network without the VIP's interface.
type missingIfaceNet struct{}

func (missingIfaceNet) Iface(name string, _ net.IP) (VIPIface, error) {
	return VIPIface{}, fmt.Errorf("vip_interface %s: route ip+net: no such network interface", name)
}
func (missingIfaceNet) HasAddr(VIPIface, netip.Addr) (bool, error) { return false, nil }
func (missingIfaceNet) AddAddr(VIPIface, netip.Prefix) error       { return errors.New("no interface") }
func (missingIfaceNet) RemoveAddr(VIPIface, netip.Prefix) error    { return errors.New("no interface") }
func (missingIfaceNet) Announce(VIPIface, netip.Addr) error        { return errors.New("no interface") }
