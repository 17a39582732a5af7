package k3s_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
)

// TestRollingUpgrade upgrades a server and two agents through their
// agents — the server first, then the agents one at a time, each
// cordoned, drained, upgraded, Ready at the new version and uncordoned —
// refuses a downgrade and a skipped minor version before touching
// anything, and stops at the first node whose new binary fails the
// agent's health gate: rolled back there, nothing after it upgraded.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	addRelease(t, e.cfg.BinaryDir, "v1.37.3+k3s1", "v1.37.3+k3s1")
	addRelease(t, e.cfg.BinaryDir, "v1.37.4+k3s1", "v1.37.9+k3s1") // fails the health gate
	addRelease(t, e.cfg.BinaryDir, "v1.37.5+k3s1", "v1.37.5+k3s1")
	prov, err := k3s.New(e.cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = prov.Close() })
	var mu sync.Mutex
	var steps []string
	eng, err := openctl.New(openctl.WithProviders(prov), openctl.WithStore(e.store), openctl.WithObserver(func(ev openctl.Event) {
		if ev.Type == openctl.EventStep && (strings.HasPrefix(ev.Step, "upgrading ") || strings.HasPrefix(ev.Step, "waiting for up-")) {
			mu.Lock()
			steps = append(steps, ev.Step)
			mu.Unlock()
		}
	}))
	require.NoError(t, err)

	hosts := e.hosts(ctx, t, "up-s1", "up-a1", "up-a2")
	c := e.cluster("up", hosts[:1], hosts[1:])
	_, err = eng.Apply(ctx, c)
	require.NoError(t, err)

	version := func(v string) {
		c.Spec["k3s"].(map[string]any)["version"] = v
	}
	kubelets := func() map[string]string {
		out, err := hosts[0].Run(ctx, "k3s", "kubectl", "get", "nodes", "--no-headers", "-o", "custom-columns=N:.metadata.name,V:.status.nodeInfo.kubeletVersion,U:.spec.unschedulable")
		require.NoError(t, err)
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(l)
			m[f[0]] = f[1] + " " + f[2]
		}
		return m
	}

	version("v1.37.3+k3s1")
	rep, err := eng.Apply(ctx, c)
	if err != nil {
		dumpLogs(ctx, t, hosts...)
	}
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Count(openctl.OutcomeUpdated))
	assert.Equal(t, map[string]string{"up-s1": "v1.37.3+k3s1 <none>", "up-a1": "v1.37.3+k3s1 <none>", "up-a2": "v1.37.3+k3s1 <none>"}, kubelets(),
		"upgraded and uncordoned")
	require.Len(t, steps, 6)
	assert.True(t, strings.HasPrefix(steps[0], "upgrading up-s1 from v1.37.2+k3s1 to v1.37.3+k3s1"), "the server first: %q", steps)
	// One agent at a time (spec.upgrade.concurrency defaults to 1): each
	// is Ready at the new version before the next starts.
	for i := 2; i < 6; i += 2 {
		agent := strings.Fields(steps[i])[1]
		assert.True(t, strings.HasPrefix(steps[i], "upgrading up-a") && strings.HasPrefix(steps[i+1], "waiting for "+agent+" "), "%q", steps)
	}
	for _, h := range hosts {
		out, err := h.Run(ctx, "/usr/local/bin/k3s.previous", "--version")
		require.NoError(t, err, "the agent keeps the previous binary")
		assert.Contains(t, string(out), "v1.37.2+k3s1")
	}
	f, err := eng.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, "v1.37.3+k3s1", f.Resource.Status["version"])

	// Refused before anything changes.
	for v, want := range map[string]string{
		"v1.37.2+k3s1": "would be a downgrade",
		"v1.39.0+k3s1": "skips a minor version; upgrade to v1.38 first",
	} {
		version(v)
		_, err = eng.Plan(ctx, c)
		require.ErrorIs(t, err, errcode.Invalid, "plan refuses what apply refuses: %s", v)
		assert.Contains(t, err.Error(), want)
		_, err = eng.Apply(ctx, c)
		require.ErrorIs(t, err, errcode.Invalid, v)
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, map[string]string{"up-s1": "v1.37.3+k3s1 <none>", "up-a1": "v1.37.3+k3s1 <none>", "up-a2": "v1.37.3+k3s1 <none>"}, kubelets())

	// A release that fails the agent's health gate: rolled back on the
	// server, the agents untouched.
	steps = nil
	version("v1.37.4+k3s1")
	_, err = eng.Apply(ctx, c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node up-s1: the upgrade to v1.37.4+k3s1 failed its health gate and was rolled back to v1.37.3+k3s1")
	assert.Contains(t, err.Error(), "the rollout stops here")
	assert.Len(t, steps, 1, "%q", steps)
	assert.Equal(t, map[string]string{"up-s1": "v1.37.3+k3s1 <none>", "up-a1": "v1.37.3+k3s1 <none>", "up-a2": "v1.37.3+k3s1 <none>"}, kubelets(),
		"the server back on its version and schedulable, the agents untouched")

	// Back to the version that works: no upgrade to do.
	steps = nil
	version("v1.37.3+k3s1")
	_, err = eng.Apply(ctx, c)
	require.NoError(t, err)
	assert.Empty(t, steps)

	// The upgrade action takes the same path: checked first, nodes at the
	// version skipped, the failing release stopped at the server.
	_, err = eng.Do(ctx, c.ID(), "upgrade", map[string]any{"version": "v1.37.2+k3s1"}, nil)
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "would be a downgrade")
	res, err := eng.Do(ctx, c.ID(), "upgrade", map[string]any{"version": "v1.37.3+k3s1"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "up: 0 of 3 nodes upgraded to v1.37.3+k3s1", res.Message)
	_, err = eng.Do(ctx, c.ID(), "upgrade", map[string]any{"version": "v1.37.4+k3s1"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node up-s1: the upgrade to v1.37.4+k3s1 failed its health gate")
	steps = nil
	res, err = eng.Do(ctx, c.ID(), "upgrade", map[string]any{"version": "v1.37.5+k3s1"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "up: 3 of 3 nodes upgraded to v1.37.5+k3s1; its manifest still says v1.37.3+k3s1: set spec.k3s.version to v1.37.5+k3s1, or the next apply refuses it as a downgrade", res.Message)
	assert.Len(t, steps, 6, "%q", steps)
	assert.Equal(t, map[string]string{"up-s1": "v1.37.5+k3s1 <none>", "up-a1": "v1.37.5+k3s1 <none>", "up-a2": "v1.37.5+k3s1 <none>"}, kubelets())
	_, err = eng.Apply(ctx, c)
	require.ErrorIs(t, err, errcode.Invalid, "the manifest still says v1.37.3")
	assert.Contains(t, err.Error(), "would be a downgrade")
	// Once the manifest says what the action did, plan has nothing to do:
	// the action recorded the version as the spec.
	version("v1.37.5+k3s1")
	plan, err := eng.Plan(ctx, c)
	require.NoError(t, err)
	for _, ch := range plan.Changes {
		assert.Equal(t, openctl.ActionNoOp, ch.Action, "%s: %v", ch.ID.Short(), ch.Reasons)
	}
	steps = nil
	rep, err = eng.Apply(ctx, c)
	require.NoError(t, err)
	assert.Empty(t, steps, "nothing to upgrade once the manifest says so")
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeUnchanged, r.Outcome, r.ID.Short())
	}
}
