package k3s_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/pki"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
)

// TestAgent forms one cluster, a systemd server and an OpenRC agent, and
// runs the node agent's scenarios on it in turn: the rollout, a rotation
// of the agent CA, then delete, which removes the agents.
func TestAgent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	s1 := e.hosts(ctx, t, "ag-s1")[0]
	a1, err := e.net.AddHost(ctx, "ag-a1", k3stest.HostOptions{Flavour: k3stest.OpenRC})
	require.NoError(t, err)
	c := e.cluster("agents", []*k3stest.Host{s1}, []*k3stest.Host{a1})
	_, err = e.engine.Apply(ctx, c)
	if err != nil {
		dumpLogs(ctx, t, s1, a1)
	}
	require.NoError(t, err)
	if !t.Run("Rollout", func(t *testing.T) { testAgentRollout(t, e, c, s1, a1) }) {
		return
	}
	if !t.Run("RotateCA", func(t *testing.T) { testRotateAgentCA(t, e, c, s1, a1) }) {
		return
	}

	_, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
	for _, h := range []*k3stest.Host{s1, a1} {
		out, err := h.Run(ctx, "sh", "-c", "ls /usr/local/bin /etc; pgrep -a openctl-agent || true")
		require.NoError(t, err)
		assert.NotContains(t, string(out), "openctl-agent", h.Name())
	}
}

// testAgentRollout: applying the cluster c (server s1, agent a1) installed
// openctl's node agent on every node with a CA of the cluster's own,
// sealed in state; the cluster is Ready only when every agent answers
// over mutual TLS. A re-apply checks the agents through the agent, not
// SSH; a stopped agent is drift that plan shows and apply repairs; the
// node actions go through it.
func testAgentRollout(t *testing.T, e *env, c *manifest.Resource, s1, a1 *k3stest.Host) {
	ctx := t.Context()
	// The PKI is in state, sealed: the first server made it, the other
	// node has the same (through a $ref to it).
	nodeID := func(name string) manifest.ID {
		return manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: name}
	}
	rec, err := e.store.Get(ctx, nodeID(s1.Name()))
	require.NoError(t, err)
	assert.NotContains(t, rec.Status, "agentPKI", "sealed, not in the clear status")
	sealed, ok := rec.SecretValue("status.agentPKI")
	require.True(t, ok)
	recA, err := e.store.Get(ctx, nodeID(a1.Name()))
	require.NoError(t, err)
	sealedA, ok := recA.SecretValue("status.agentPKI")
	require.True(t, ok)
	assert.Equal(t, sealed.Reveal(), sealedA.Reveal())

	// A client with the controller's certificate from state reaches each
	// agent; the agent's certificate names the node.
	doc, err := readPKI(ctx, e, nodeID(s1.Name()))
	require.NoError(t, err)
	for _, h := range []*k3stest.Host{s1, a1} {
		info, err := agentInfo(ctx, h, doc)
		require.NoError(t, err, h.Name())
		assert.Equal(t, agent.StateActive, info.ServiceState, h.Name())
		assert.Equal(t, standinVersion, info.K3sVersion, h.Name())
		out, err := h.Run(ctx, "cat", agent.DefaultConfigDir+"/"+pki.ServerCertFile)
		require.NoError(t, err)
		cert, err := pki.ParseCert(out)
		require.NoError(t, err)
		assert.NoError(t, cert.VerifyHostname(h.Name()))
		assert.NoError(t, cert.VerifyHostname(h.Addr().String()))
	}
	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, f.Resource.Status["phase"])
	for _, n := range f.Resource.Status["nodes"].([]any) {
		assert.NotEmpty(t, n.(map[string]any)["agentVersion"], n)
	}

	// A re-apply changes nothing and runs only SSH reads: the agents are
	// asked over mTLS.
	e.takeSteps()
	rep, err := e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Count(openctl.OutcomeUnchanged))
	for _, s := range e.takeSteps() {
		assert.Contains(t, s, "read the node's state", "a no-op re-apply only reads")
	}

	// A stopped agent: plan shows it, apply starts it again.
	_, err = a1.Run(ctx, "rc-service", agent.ServiceName, "stop")
	require.NoError(t, err)
	plan, err := e.engine.Plan(ctx, c)
	require.NoError(t, err)
	var reasons []string
	for _, ch := range plan.Changes {
		if ch.ID.Name == a1.Name() {
			reasons = append(reasons, ch.Reasons...)
		}
	}
	require.NotEmpty(t, reasons, "the stopped agent is drift")
	assert.Contains(t, strings.Join(reasons, "\n"), "its agent does not answer")
	rep, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUpdated), "the node whose agent stopped")
	out, err := a1.Run(ctx, "rc-service", agent.ServiceName, "status")
	require.NoError(t, err)
	assert.Contains(t, string(out), "started")

	// A stopped k3s: plan shows it, apply starts it through the agent
	// (no SSH command but reads).
	_, err = a1.Run(ctx, "rc-service", "k3s-agent", "stop")
	require.NoError(t, err)
	plan, err = e.engine.Plan(ctx, c)
	require.NoError(t, err)
	reasons = nil
	for _, ch := range plan.Changes {
		if ch.ID.Name == a1.Name() {
			reasons = append(reasons, ch.Reasons...)
		}
	}
	assert.Contains(t, strings.Join(reasons, "\n"), "the k3s-agent service is inactive")
	e.takeSteps()
	_, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	for _, s := range e.takeSteps() {
		assert.NotContains(t, s, "start k3s", "started through the agent, not SSH")
	}
	out, err = a1.Run(ctx, "rc-service", "k3s-agent", "status")
	require.NoError(t, err)
	assert.Contains(t, string(out), "started")
}
