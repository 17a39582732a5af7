package proxmox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// Place decides, when planning, where each VM that lists allowed nodes
// goes: by memory not yet allotted — what the nodes' VMs have, the VMs
// named on a node in the same plan, and those placed before it — the
// first listed on a tie; the same resources on the same cluster are
// placed the same way; a VM that exists stays where it is; a VM named on
// a node is left alone.
func TestPlace(t *testing.T) {
	e := newEnv(t, proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage)...)
	ctx := ctxT(t)
	// 16 GiB already on pve2.
	_, err := e.p.Apply(ctx, vm("big", map[string]any{"node": "pve2", "memory": map[string]any{"size": int64(16384)}}))
	require.NoError(t, err)

	cluster := func() []*manifest.Resource {
		var rs []*manifest.Resource
		for i, n := range []string{"pve1", "pve2", "pve3"} {
			rs = append(rs, vm("cp-"+string(rune('0'+i)), map[string]any{"node": n, "memory": map[string]any{"size": int64(4096)}}))
		}
		for _, name := range []string{"w-0", "w-1"} {
			w := vm(name, map[string]any{"memory": map[string]any{"size": int64(8192)}, "nodes": []any{"pve1", "pve2", "pve3"}})
			delete(w.Spec, "node")
			rs = append(rs, w)
		}
		return rs
	}
	placed := func() map[string]any {
		rs := cluster()
		require.NoError(t, e.p.Place(ctx, rs))
		out := map[string]any{}
		for _, r := range rs {
			out[r.Metadata.Name] = r.Spec["node"]
			assert.NotContains(t, r.Spec, "nodes", "%s: a placed VM names its node", r.Metadata.Name)
		}
		return out
	}
	// pve1 and pve3 have 60 GiB left after the control planes, pve2 44:
	// w-0 to pve1 (first listed of the two), then w-1 to pve3.
	want := map[string]any{"cp-0": "pve1", "cp-1": "pve2", "cp-2": "pve3", "w-0": "pve1", "w-1": "pve3"}
	assert.Equal(t, want, placed())
	assert.Equal(t, want, placed(), "the same again")

	// w-1 created elsewhere (by hand, or before this rule): it stays
	// there, and w-0's choice counts it.
	w1 := cluster()[4]
	w1.Spec["node"] = "pve2"
	delete(w1.Spec, "nodes")
	_, err = e.p.Apply(ctx, w1)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"cp-0": "pve1", "cp-1": "pve2", "cp-2": "pve3", "w-0": "pve1", "w-1": "pve2"}, placed())

	// Nothing to choose: the cluster is not read.
	before := e.srv.RequestCounts()["GET /cluster/resources"]
	require.NoError(t, e.p.Place(ctx, cluster()[:3]))
	assert.Equal(t, before, e.srv.RequestCounts()["GET /cluster/resources"])
}
