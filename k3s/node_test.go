package k3s_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
)

// A Node applied on its own joins the only cluster openctl knows, and
// deleted on its own leaves it properly: drained, its Node deleted from
// the API (again, if its kubelet registered it anew before k3s stopped),
// k3s uninstalled — the cluster keeps running.
func TestNodeJoinsAndLeaves(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	hs := e.hosts(ctx, t, "base", "extra")
	c := e.cluster("base", hs[:1], nil)
	_, err := e.engine.Apply(ctx, c)
	require.NoError(t, err)

	node := &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Metadata: manifest.Metadata{Name: "extra"}, Spec: map[string]any{
		"role": "agent", "address": hs[1].Addr().String(),
		"sshHostKey": string(ssh.MarshalAuthorizedKey(hs[1].HostKey())),
		"ssh":        map[string]any{"user": k3stest.DefaultUser, "privateKeyPath": e.net.KeyFile()},
		"labels":     []any{"pool=extra"},
	}}
	rep, err := e.engine.Apply(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, openctl.OutcomeCreated, rep.Results[0].Outcome)
	out, err := hs[0].Run(ctx, "k3s", "kubectl", "get", "nodes", "-L", "pool", "--no-headers")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^extra +Ready .* extra$`, string(out), "joined the cluster, labelled")
	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, "1/1", f.Resource.Status["readyNodes"], "the cluster lists its own nodes")

	// Until k3s stops on its host, the node's kubelet may register its
	// Node again after the provider deleted it (the stand-in's does at
	// its next status update, within 10 s): the hook holds the uninstall
	// until it has, and the delete must still leave no Node behind.
	var registeredAgain atomic.Bool
	e.setHook(func(host, step string) {
		if step != "uninstall k3s" || host != hs[1].SSHAddr() {
			return
		}
		registeredAgain.Store(assert.Eventually(t, func() bool {
			_, err := hs[0].Run(ctx, "k3s", "kubectl", "get", "node", "extra")
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "the kubelet registers its deleted Node again"))
	})
	rep, err = e.engine.Delete(ctx, node.ID())
	e.setHook(nil)
	require.NoError(t, err)
	require.True(t, registeredAgain.Load(), "the uninstall waited for the Node to be back")
	assert.Equal(t, openctl.OutcomeDeleted, rep.Results[0].Outcome)
	out, err = hs[0].Run(ctx, "k3s", "kubectl", "get", "nodes", "--no-headers")
	require.NoError(t, err)
	assert.NotContains(t, string(out), "extra", "its Node is gone from the API")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, string(out))
	out, err = hs[1].Run(ctx, "sh", "-c", "ls /usr/local/bin; pgrep -a k3s || true")
	require.NoError(t, err)
	assert.NotContains(t, string(out), "k3s agent", "uninstalled")

	_, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
}
