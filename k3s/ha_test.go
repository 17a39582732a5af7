package k3s_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/k3s/kubeconfig"
	"github.com/openctl/openctl/manifest"
)

// TestHACluster creates a 3-server + 2-agent cluster on five test hosts
// (one agent on OpenRC), re-applies it as a no-op, upgrades it through
// the agents with no failed /readyz poll through the VIP (the VIP leaves
// each server before it restarts; the poller is client-go, as kubectl
// and every controller are), loses the first server and still reaches
// the API through the others, and deletes it.
func TestHACluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	servers := e.hosts(ctx, t, "s1", "s2", "s3")
	a1 := e.hosts(ctx, t, "a1")[0]
	a2, err := e.net.AddHost(ctx, "a2", k3stest.HostOptions{Flavour: k3stest.OpenRC})
	require.NoError(t, err)
	c := e.cluster("ha", servers, []*k3stest.Host{a1, a2})
	vip := e.vip()
	c.Spec["vip"] = map[string]any{"address": vip.String()}

	start := time.Now()
	rep, err := e.engine.Apply(ctx, c)
	if err != nil {
		dumpLogs(ctx, t, append(servers, a1, a2)...)
	}
	require.NoError(t, err)
	wall := time.Since(start)
	durations := map[string]time.Duration{}
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeCreated, r.Outcome, r.ID.Short())
		durations[r.ID.Name] = r.Duration
	}
	// The critical path: the first server, then each joining server in
	// turn, then the slower agent, then the cluster's own apply.
	bound := durations["s1"] + durations["s2"] + durations["s3"] + max(durations["a1"], durations["a2"]) + durations["ha"]
	t.Logf("3 servers + 2 agents Ready in %s; critical-path bound %s; wall/bound %.2f; per node %v",
		wall.Round(time.Millisecond), bound.Round(time.Millisecond), float64(wall)/float64(bound), durations)
	for _, h := range append(servers, a1, a2) {
		assert.Equal(t, 1, k3s.SSHPool(e.prov).Opened(h.SSHAddr()), "one SSH connection to %s", h.Name())
	}

	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, f.Resource.Status["phase"])
	assert.Equal(t, "5/5", f.Resource.Status["readyNodes"])
	assert.Equal(t, "https://"+vip.String()+":6443", f.Resource.Status["endpoint"])
	assert.NotContains(t, f.Resource.Status, "message", "no single point of failure to warn of")
	// The kubeconfig users get points at the VIP, TLS verified.
	kc, err := os.ReadFile(filepath.Join(e.cfg.KubeconfigDir, "ha.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(kc), "server: https://"+vip.String()+":6443")
	api, err := kubeconfig.Client(kc)
	require.NoError(t, err)
	nodes, err := api.Nodes(ctx)
	require.NoError(t, err)
	assert.Len(t, nodes, 5)
	out, err := servers[0].Run(ctx, "k3s", "kubectl", "get", "nodes", "--no-headers")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 5, string(out))
	for _, l := range lines {
		assert.Contains(t, l, " Ready ", l)
		assert.Contains(t, l, standinVersion, l)
	}

	// A second apply only reads.
	e.takeSteps()
	start = time.Now()
	rep, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeUnchanged, r.Outcome, r.ID.Short())
	}
	steps := e.takeSteps()
	t.Logf("no-op re-apply: %s, %d remote commands", time.Since(start).Round(time.Millisecond), len(steps))
	for _, s := range steps {
		assert.Contains(t, s, "read the node's state", "a no-op re-apply only reads")
	}

	// A rolling upgrade through the agents, the API polled through the
	// VIP every 100 ms meanwhile by a Kubernetes client: client-go, which
	// retries a GET whose connection was reset — as every connection to
	// the server the VIP leaves is, when the address moves.
	ready := func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return api.Ready(pctx)
	}
	addRelease(t, e.cfg.BinaryDir, "v1.37.3+k3s1", "v1.37.3+k3s1")
	c.Spec["k3s"].(map[string]any)["version"] = "v1.37.3+k3s1"
	stop := make(chan struct{})
	polled := make(chan [2]int)
	var pollErrs []string
	go func() {
		ok, failed := 0, 0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				polled <- [2]int{ok, failed}
				return
			case <-tick.C:
			}
			if err := ready(); err != nil {
				failed++
				pollErrs = append(pollErrs, time.Now().Format("15:04:05.000")+" "+err.Error())
			} else {
				ok++
			}
		}
	}()
	start = time.Now()
	rep, err = e.engine.Apply(ctx, c)
	close(stop)
	counts := <-polled
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Count(openctl.OutcomeUpdated))
	t.Logf("rolling upgrade of 3 servers + 2 agents: %s; /readyz through the VIP every 100 ms: %d answered, %d failed",
		time.Since(start).Round(time.Millisecond), counts[0], counts[1])
	assert.Zero(t, counts[1], "no API outage through the VIP: the VIP leaves each server before it restarts\n%s", strings.Join(pollErrs, "\n"))
	nodes, err = api.Nodes(ctx)
	require.NoError(t, err)
	for _, n := range nodes {
		assert.Equal(t, "v1.37.3+k3s1", n.KubeletVersion, n.Name)
		assert.True(t, n.Ready && !n.Unschedulable, n.Name)
	}

	// The first server goes away: the other two keep quorum, one of them
	// takes the VIP, and the API answers there again.
	require.NoError(t, servers[0].PowerOff(ctx))
	off := time.Now()
	require.Eventually(t, func() bool {
		nodes, err := api.Nodes(ctx)
		return err == nil && len(nodes) == 5
	}, time.Minute, 100*time.Millisecond, "the API answers through the VIP")
	t.Logf("the first server powered off: the API answers on the VIP again after %s", time.Since(off).Round(10*time.Millisecond))
	require.NoError(t, servers[0].PowerOn(ctx))

	rep, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Count(openctl.OutcomeDeleted))
	for _, h := range append(servers, a1, a2) {
		out, err := h.Run(ctx, "sh", "-c", "ls /usr/local/bin; pgrep -a k3s || true")
		require.NoError(t, err)
		assert.NotContains(t, string(out), "\nk3s\n", h.Name())
		assert.NotContains(t, string(out), "k3s server", h.Name())
		assert.NotContains(t, string(out), "k3s agent", h.Name())
	}
	_, err = e.engine.Get(ctx, manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: "s1"})
	assert.Error(t, err)
}
