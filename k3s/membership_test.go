package k3s_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
)

// A Node that names no cluster joins the only one openctl knows; with
// several it is refused before anything is done, never guessed. Plan
// refuses each case with apply's code and message.
func TestNodeMembership(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p := newOffline(t)
	st := state.NewMemory()
	e, err := openctl.New(openctl.WithProviders(p), openctl.WithStore(st))
	require.NoError(t, err)
	record := func(name string) {
		_, err := st.Put(ctx, &state.Record{APIVersion: k3s.APIVersion, Kind: k3s.KindCluster, Name: name, SpecHash: "x",
			Spec:   map[string]any{"k3s": map[string]any{"version": "v1.37.2+k3s1"}, "hosts": []any{map[string]any{"name": name + "-s", "address": "192.0.2.1", "role": "server"}}},
			Status: map[string]any{"nodes": []any{map[string]any{"name": name + "-s", "role": "server", "address": "192.0.2.1"}}}})
		require.NoError(t, err)
	}
	node := func(cluster string) *manifest.Resource {
		spec := map[string]any{"role": "agent", "address": "192.0.2.50", "ssh": map[string]any{"user": "root"}}
		if cluster != "" {
			spec["cluster"] = cluster
		}
		return &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Metadata: manifest.Metadata{Name: "extra"}, Spec: spec}
	}

	refused := func(n *manifest.Resource, code errcode.Code, msg string) {
		t.Helper()
		_, err := e.Plan(ctx, n)
		require.ErrorIs(t, err, code, "plan")
		assert.Contains(t, err.Error(), msg, "plan")
		_, err = e.Apply(ctx, n)
		require.ErrorIs(t, err, code, "apply")
		assert.Contains(t, err.Error(), msg, "apply")
	}
	refused(node(""), errcode.NotFound, "there is no cluster to join")

	record("blue")
	record("green")
	refused(node(""), errcode.Conflict, "node extra names no cluster and there are 2 (blue, green): set spec.cluster to one of them; nothing was done on the host")
	refused(node("red"), errcode.NotFound, `cluster "red" does not exist (clusters: blue, green)`)

	assert.Zero(t, k3s.SSHPool(p).Opened("192.0.2.50:22"), "no SSH to the node's host")
	_, err = st.Get(ctx, node("").ID())
	assert.ErrorIs(t, err, errcode.NotFound, "nothing recorded")
}
