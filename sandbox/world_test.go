package sandbox_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/sandbox"
	"github.com/openctl/openctl/state"
)

// openSandbox opens the Proxmox and K3s providers on one shared world, as
// the CLI's --sandbox does, and returns an engine over them.
func openSandbox(t *testing.T) (*openctl.Engine, *sandbox.World) {
	t.Helper()
	ctx := t.Context()
	box := sandbox.NewShared(sandbox.Options{Logger: testLogger(t)})
	reg := &registry.Registry{}
	for _, d := range []registry.Driver{proxmox.Driver{SandboxGuests: box.ProxmoxGuests}, k3s.Driver{SandboxHosts: box.K3sHosts}} {
		sb, err := d.(registry.Sandboxer).Sandbox(ctx, registry.SandboxOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sb.Close() })
		p, err := d.Open(ctx, sb.Config, registry.OpenOptions{Registry: reg, Logger: testLogger(t)})
		require.NoError(t, err)
		require.NoError(t, reg.Register(p))
	}
	t.Cleanup(func() { _ = reg.Close() })
	e, err := openctl.New(openctl.WithRegistry(reg), openctl.WithStore(state.NewMemory()))
	require.NoError(t, err)
	w := box.World()
	t.Cleanup(func() {
		if t.Failed() {
			dumpJournals(t, w)
		}
	})
	return e, w
}

// dumpJournals logs the journal of every VM's host.
func dumpJournals(t *testing.T, w *sandbox.World) {
	for _, name := range []string{"dev-cp-0", "dev-cp-1", "dev-cp-2", "dev-worker-0", "dev-worker-1"} {
		h, ok := w.Host(name)
		if !ok {
			continue
		}
		var out strings.Builder
		_, _ = h.Run(context.Background(), "journalctl --no-pager -n 200", nil, &out, &out, nil, "root")
		t.Logf("%s's journal:\n%s", name, out.String())
	}
}

// TestK3sOnSandbox applies examples/k3s-proxmox.yaml in a sandbox: five
// simulated VMs whose guests answer SSH on loopback addresses, three
// servers and two agents of the in-process k3s, the VIP moved onto the
// sandbox's network. The kubeconfig the provider wrote works with
// client-go; a re-apply changes nothing; a delete removes everything.
func TestK3sOnSandbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e, _ := openSandbox(t)
	rs, err := manifest.Load(ctx, []string{"../examples/k3s-proxmox.yaml"}, manifest.LoadOptions{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	c := rs[0]

	start := time.Now()
	rep, err := e.Apply(ctx, c)
	require.NoError(t, err)
	t.Logf("5 VMs and 3 servers + 2 agents Ready in %s", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 11, rep.Count(openctl.OutcomeCreated), "5 VMs, 5 nodes, the cluster")

	f, err := e.Get(ctx, c.ID())
	require.NoError(t, err)
	st := f.Resource.Status
	assert.Equal(t, k3s.PhaseReady, st["phase"])
	assert.Equal(t, "5/5", st["readyNodes"])
	assert.Regexp(t, `^https://127\.[0-9]+\.1\.49:6443$`, st["endpoint"], "the VIP, on the sandbox's network")

	path, _, _ := f.Resource.Field("status.outputs.kubeconfigPath")
	b, err := os.ReadFile(path.(string))
	require.NoError(t, err)
	rc, err := clientcmd.RESTConfigFromKubeConfig(b)
	require.NoError(t, err)
	assert.Equal(t, st["endpoint"], rc.Host)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	ready := map[string]bool{}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready[n.Name] = cond.Status == corev1.ConditionTrue
			}
		}
	}
	assert.Equal(t, map[string]bool{"dev-cp-0": true, "dev-cp-1": true, "dev-cp-2": true, "dev-worker-0": true, "dev-worker-1": true}, ready)

	start = time.Now()
	rep, err = e.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 11, rep.Count(openctl.OutcomeUnchanged), "a re-apply changes nothing")
	t.Logf("no-op re-apply in %s", time.Since(start).Round(time.Millisecond))

	rep, err = e.Delete(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, 11, rep.Count(openctl.OutcomeDeleted))
}

// testLogger logs to the test's log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
