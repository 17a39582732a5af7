package k3s_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s/k3stest"
)

// bare is a pod no controller manages, bound to a node: draining that
// node needs force. A PodDisruptionBudget guards it: evicting it is
// refused while the budget stands.
const bare = `apiVersion: v1
kind: Pod
metadata: {name: bare, namespace: default, labels: {app: guarded}}
spec:
  nodeName: %s
  containers: [{name: pause, image: registry.k8s.io/pause:3.10}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guard, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: guarded}}
`

// TestScale scales a cluster on existing hosts from 1 server + 2 agents
// to 3 servers + 1 agent and back to 1 server: servers join one at a
// time; the agent that goes is drained first — refused, naming the pod,
// while the drain policy does not allow evicting an unmanaged pod, then
// while a PodDisruptionBudget forbids evicting it, done once neither
// stands — then deleted from the API and uninstalled; servers leave one
// at a time, each etcd member gone before the next.
func TestScale(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	hosts := e.hosts(ctx, t, "sc-s1", "sc-s2", "sc-s3", "sc-a1", "sc-a2")
	s1, s2, s3, a1, a2 := hosts[0], hosts[1], hosts[2], hosts[3], hosts[4]
	c := e.cluster("sc", []*k3stest.Host{s1}, []*k3stest.Host{a1, a2})
	_, err := e.engine.Apply(ctx, c)
	require.NoError(t, err)
	nodes := func() string {
		out, err := s1.Run(ctx, "k3s", "kubectl", "get", "nodes", "--no-headers", "-o", "custom-columns=N:.metadata.name")
		require.NoError(t, err)
		return strings.Join(strings.Fields(string(out)), " ")
	}
	require.Equal(t, "sc-a1 sc-a2 sc-s1", nodes())
	out, err := s1.Run(ctx, "sh", "-c", "k3s kubectl apply -f - <<'EOF'\n"+strings.ReplaceAll(bare, "%s", "sc-a2")+"EOF")
	require.NoError(t, err, "%s", out)

	// Up to three servers, down to one agent: the plan names what goes.
	c = e.cluster("sc", []*k3stest.Host{s1, s2, s3}, []*k3stest.Host{a1})
	plan, err := e.engine.Plan(ctx, c)
	require.NoError(t, err)
	actions := map[string]openctl.Action{}
	for _, ch := range plan.Changes {
		actions[ch.ID.Name] = ch.Action
	}
	assert.Equal(t, openctl.ActionCreate, actions["sc-s2"])
	assert.Equal(t, openctl.ActionCreate, actions["sc-s3"])
	assert.Equal(t, openctl.ActionDelete, actions["sc-a2"])
	_, err = e.engine.Apply(ctx, c)
	require.Error(t, err, "the unmanaged pod blocks the drain")
	assert.Contains(t, err.Error(), "node sc-a2")
	assert.Contains(t, err.Error(), "default/bare")
	assert.Contains(t, nodes(), "sc-a2", "it stays")

	c.Spec["drain"] = map[string]any{"force": true, "timeout": "5s"}
	_, err = e.engine.Apply(ctx, c)
	require.Error(t, err, "the disruption budget blocks the drain")
	assert.Contains(t, err.Error(), "node sc-a2")
	assert.Contains(t, err.Error(), "pod default/bare: eviction still refused")
	assert.Contains(t, err.Error(), "disruption budget")
	assert.Contains(t, nodes(), "sc-a2", "it stays")
	out, err = a2.Run(ctx, "pgrep", "-f", "k3s agent")
	require.NoError(t, err, "k3s still runs on the node the drain could not empty: %s", out)

	_, err = s1.Run(ctx, "k3s", "kubectl", "delete", "pdb", "guard")
	require.NoError(t, err)
	c.Spec["drain"] = map[string]any{"force": true, "timeout": "1m"}
	_, err = e.engine.Apply(ctx, c)
	if err != nil {
		dumpLogs(ctx, t, hosts...)
	}
	require.NoError(t, err)
	assert.Equal(t, "sc-a1 sc-s1 sc-s2 sc-s3", nodes())
	out, err = a2.Run(ctx, "sh", "-c", "ls /usr/local/bin; pgrep -af 'k3s (server|agent)' || true")
	require.NoError(t, err)
	assert.NotRegexp(t, `(?m)^k3s$`, string(out), "uninstalled")
	assert.NotContains(t, string(out), "k3s agent", "stopped")
	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, "4/4", f.Resource.Status["readyNodes"])

	// A joined server deleted from the API loses its etcd member and
	// stops; apply joins it again from a fresh datastore.
	_, err = s1.Run(ctx, "k3s", "kubectl", "delete", "node", "sc-s3")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _ := s3.Run(ctx, "systemctl", "is-active", "k3s")
		return strings.TrimSpace(string(out)) != "active"
	}, time.Minute, 500*time.Millisecond, "a server whose member was removed exits")
	_, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, "sc-a1 sc-s1 sc-s2 sc-s3", nodes())

	// Back to one server: the other two leave one at a time.
	c = e.cluster("sc", []*k3stest.Host{s1}, []*k3stest.Host{a1})
	c.Spec["drain"] = map[string]any{"force": true}
	_, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, "sc-a1 sc-s1", nodes())
	out, err = s1.Run(ctx, "sh", "-c", "k3s kubectl get --raw /readyz")
	require.NoError(t, err, "%s", out)
	f, err = e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, "2/2", f.Resource.Status["readyNodes"])
}
