package k3s_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/kubeconfig"
	"github.com/openctl/openctl/manifest"
)

func TestSingleServerCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	hs := e.hosts(ctx, t, "one")
	c := e.cluster("solo", hs, nil)
	c.Spec["kubeconfig"] = map[string]any{"merge": true, "context": "lab-solo"}
	// The user's kubeconfig already has another cluster: it stays.
	other := []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster: {server: 'https://other.example:6443'}\nusers:\n- name: other\n  user: {token: t}\ncontexts:\n- name: other\n  context: {cluster: other, user: other}\ncurrent-context: other\n")
	require.NoError(t, kubeconfig.Write(e.cfg.KubeConfig, other))

	start := time.Now()
	rep, err := e.engine.Apply(ctx, c)
	require.NoError(t, err)
	t.Logf("single server ready in %s", time.Since(start).Round(time.Millisecond))
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeCreated, r.Outcome, r.ID.Short())
	}
	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	st := f.Resource.Status
	assert.Equal(t, k3s.PhaseReady, st["phase"])
	assert.Equal(t, standinVersion, st["version"])
	assert.Equal(t, "1/1", st["readyNodes"])
	assert.Equal(t, "https://"+hs[0].Addr().String()+":6443", st["endpoint"])
	assert.Contains(t, st["message"], "single point of failure")
	nodes := st["nodes"].([]any)
	require.Len(t, nodes, 1)
	assert.Equal(t, []any{"control-plane", "etcd", "master"}, nodes[0].(map[string]any)["roles"], "from the API")
	assert.Equal(t, standinVersion, nodes[0].(map[string]any)["kubeletVersion"])

	// The kubeconfig: its own file, and merged beside the other cluster.
	path := filepath.Join(e.cfg.KubeconfigDir, "solo.yaml")
	assert.Equal(t, map[string]any{"context": "lab-solo", "kubeconfigPath": path, "mergedInto": e.cfg.KubeConfig}, st["outputs"])
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	kc, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(kc), "server: https://"+hs[0].Addr().String()+":6443")
	assert.Contains(t, string(kc), "current-context: lab-solo")
	cl, err := kubeconfig.Client(kc)
	require.NoError(t, err)
	require.NoError(t, cl.Ready(ctx), "the API answers through the written kubeconfig")
	merged, err := os.ReadFile(e.cfg.KubeConfig)
	require.NoError(t, err)
	for _, want := range []string{"name: other", "name: lab-solo", "current-context: other"} {
		assert.Contains(t, string(merged), want)
	}

	node, err := e.engine.Get(ctx, manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: "one"})
	require.NoError(t, err)
	assert.Equal(t, "server", node.Resource.Status["role"])
	tok, _ := node.Resource.Status["token"].(string)
	assert.Regexp(t, `^K10[0-9a-f]{64}::server:[0-9a-f]{32}$`, tok, "the token read from the server, CA hash included")

	// The token never went on a command line: it is in the 0600
	// environment file only.
	out, err := hs[0].Run(ctx, "stat", "-c", "%a", "/etc/systemd/system/k3s.service.env")
	require.NoError(t, err)
	assert.Equal(t, "600\n", string(out))

	// A second apply changes nothing and restarts nothing.
	pidBefore, err := hs[0].Run(ctx, "pgrep", "-o", "-f", "k3s server")
	require.NoError(t, err)
	e.takeSteps()
	start = time.Now()
	rep, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeUnchanged, r.Outcome, r.ID.Short())
	}
	steps := e.takeSteps()
	t.Logf("no-op re-apply: %s, %d remote commands: %v", time.Since(start).Round(time.Millisecond), len(steps), steps)
	for _, s := range steps {
		assert.Contains(t, s, "read the node's state", "a no-op re-apply only reads")
	}
	pidAfter, err := hs[0].Run(ctx, "pgrep", "-o", "-f", "k3s server")
	require.NoError(t, err)
	assert.Equal(t, string(pidBefore), string(pidAfter), "k3s was not restarted")
	assert.Equal(t, 1, k3s.SSHPool(e.prov).Opened(hs[0].SSHAddr()), "one SSH connection for everything")

	// A stopped service is drift: plan shows it, apply starts it again.
	_, err = hs[0].Run(ctx, "systemctl", "stop", "k3s")
	require.NoError(t, err)
	plan, err := e.engine.Plan(ctx, c)
	require.NoError(t, err)
	var nodeChange *openctl.Change
	for i := range plan.Changes {
		if plan.Changes[i].ID.Kind == k3s.KindNode {
			nodeChange = &plan.Changes[i]
		}
	}
	require.NotNil(t, nodeChange)
	assert.Equal(t, openctl.ActionUpdate, nodeChange.Action)
	assert.Contains(t, nodeChange.Reasons, "the node is Stopped: the k3s service is inactive")
	clusterChange := plan.Changes[len(plan.Changes)-1]
	require.Equal(t, k3s.KindCluster, clusterChange.ID.Kind)
	assert.Equal(t, openctl.ActionUpdate, clusterChange.Action)
	assert.Contains(t, strings.Join(clusterChange.Reasons, "\n"), "the cluster is Down: the API at ")
	rep, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	node, err = e.engine.Get(ctx, manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: "one"})
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, node.Resource.Status["phase"], "started again")

	rep, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeDeleted))
	out, err = hs[0].Run(ctx, "sh", "-c", "ls /usr/local/bin /etc/systemd/system /var/lib/rancher 2>&1; pgrep -a k3s || true")
	require.NoError(t, err)
	for _, left := range []string{"k3s.service", "\nk3s\n", "k3s server"} {
		assert.NotContains(t, string(out), left, "uninstalled, and nothing of it runs")
	}
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, fs.ErrNotExist, "its kubeconfig file is gone")
	merged, err = os.ReadFile(e.cfg.KubeConfig)
	require.NoError(t, err)
	assert.NotContains(t, string(merged), "lab-solo", "and its entries in the user's")
	assert.Contains(t, string(merged), "name: other")
}

// An apply interrupted while it uploads k3s leaves nothing half-written,
// and the next apply converges.
func TestInterruptedInstall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	hs := e.hosts(ctx, t, "cut")
	c := e.cluster("cut", hs, nil)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.setHook(func(_, step string) {
		if step == "write /usr/local/bin/k3s" {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
	})
	_, err := e.engine.Apply(cctx, c)
	require.Error(t, err)
	e.setHook(nil)
	out, err := hs[0].Run(ctx, "sh", "-c", "ls -a /usr/local/bin | grep openctl- || true")
	require.NoError(t, err)
	assert.Empty(t, string(out), "no temporary file left")

	rep, err := e.engine.Apply(ctx, c)
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeCreated, r.Outcome, r.ID.Short())
	}
	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, f.Resource.Status["phase"])
	_, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
}
