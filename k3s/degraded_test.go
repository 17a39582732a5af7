package k3s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
)

// A cluster with machines powered off is a status, not an error: reading
// it answers at once (no retries) and says what is down. One server of
// three off: Degraded, naming it, etcd keeping its quorum; its Node is
// Unreachable with how its host failed. Two of three off: Down (the API
// does not answer), saying the quorum is lost.
func TestDegradedCluster(t *testing.T) {
	t.Parallel()
	s, ctx := appliedSandbox(t)

	vm := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: name}
	}
	nodeID := func(name string) manifest.ID {
		return manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: name}
	}
	read := func() (map[string]any, time.Duration) {
		t.Helper()
		start := time.Now()
		f, err := s.engine.Get(ctx, s.cluster.ID())
		require.NoError(t, err, "reading a cluster with machines down is not an error")
		return f.Resource.Status, time.Since(start)
	}

	_, err := s.engine.Do(ctx, vm("dev-cp-0"), "stop", nil, nil)
	require.NoError(t, err)
	var st map[string]any
	var took time.Duration
	require.Eventually(t, func() bool {
		st, took = read()
		return st["phase"] == k3s.PhaseDegraded
	}, time.Minute, time.Second, "one server off: Degraded")
	msg, _ := st["message"].(string)
	assert.Contains(t, msg, "dev-cp-0 is Unreachable (k3s: node dev-cp-0: connect: ")
	assert.Contains(t, msg, "etcd keeps its quorum: 2 of 3 servers up")
	assert.Equal(t, "4/5", st["readyNodes"])
	assert.Less(t, took, 10*time.Second, "read at once, not retried")
	n, err := s.engine.Get(ctx, nodeID("dev-cp-0"))
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseUnreachable, n.Resource.Status["phase"])
	assert.Contains(t, n.Resource.Status["message"], "connect: ")
	n, err = s.engine.Get(ctx, nodeID("dev-cp-1"))
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, n.Resource.Status["phase"])
	plan, err := s.engine.Plan(ctx, s.cluster)
	require.NoError(t, err, "plan reads it too")
	actions := map[string]string{}
	for _, c := range plan.Changes {
		actions[c.ID.Short()] = string(c.Action) + ": " + strings.Join(c.Reasons, "; ")
	}
	assert.Contains(t, actions["VirtualMachine/dev-cp-0"], "update: ", "the stopped VM is started: %v", actions)
	assert.Contains(t, actions["Node/dev-cp-0"], "known only after apply")
	assert.Contains(t, actions["Cluster/dev"], "the cluster is Degraded: ")

	_, err = s.engine.Do(ctx, vm("dev-cp-1"), "stop", nil, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, _ = read()
		return st["phase"] == k3s.PhaseDown
	}, 2*time.Minute, time.Second, "two of three servers off: Down\n%v", st)
	assert.Contains(t, st["message"], "the API at https://")
	assert.Contains(t, st["message"], "etcd has lost its quorum: 1 of 3 servers up, 2 needed")
}

// Apply repairs what it can: a Cluster's VM that was stopped is started
// again, its node comes back Ready and the cluster Ready, reported as
// updates; plan is empty after.
func TestApplyStartsStoppedVM(t *testing.T) {
	t.Parallel()
	s, ctx := appliedSandbox(t)
	worker := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "dev-worker-1"}
	_, err := s.engine.Do(ctx, worker, "stop", nil, nil)
	require.NoError(t, err)

	rep, err := s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)
	outcomes := map[string]string{}
	for _, r := range rep.Results {
		outcomes[r.ID.Short()] = string(r.Outcome)
	}
	assert.Equal(t, "updated", outcomes["VirtualMachine/dev-worker-1"], "%v", outcomes)
	f, err := s.engine.Get(ctx, worker)
	require.NoError(t, err)
	assert.Equal(t, "running", f.Resource.Status["state"])
	c, err := s.engine.Get(ctx, s.cluster.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, c.Resource.Status["phase"], "%v", c.Resource.Status["message"])
	assert.Equal(t, "5/5", c.Resource.Status["readyNodes"])
	plan, err := s.engine.Plan(ctx, s.cluster)
	require.NoError(t, err)
	assert.False(t, plan.HasChanges(), "%v", plan.Changes)
}

// An agent install interrupted between the agent's key and its
// certificate leaves a service that fails on every start (the key
// missing); the next apply gives it fresh credentials and it answers.
func TestApplyRepairsAgentWithoutKey(t *testing.T) {
	t.Parallel()
	s, ctx := appliedSandbox(t)
	_, err := s.run(ctx, "dev-worker-1", "rm -f /etc/openctl-agent/server.key && systemctl restart openctl-agent")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _ := s.run(ctx, "dev-worker-1", "systemctl is-active openctl-agent || true")
		return strings.TrimSpace(out) != "active"
	}, 30*time.Second, 200*time.Millisecond, "the agent fails without its key")

	_, err = s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)
	out, err := s.run(ctx, "dev-worker-1", "systemctl is-active openctl-agent; test -s /etc/openctl-agent/server.key && echo key")
	require.NoError(t, err)
	assert.Equal(t, "active\nkey\n", out)
	c, err := s.engine.Get(ctx, s.cluster.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, c.Resource.Status["phase"], "%v", c.Resource.Status["message"])
}

// appliedSandbox is the example applied on a sandbox side, and a context
// bounding the test.
func appliedSandbox(t *testing.T) (*diffSide, context.Context) {
	t.Helper()
	s := newSandboxSide(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	t.Cleanup(cancel)
	_, err := s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)
	return s, ctx
}
