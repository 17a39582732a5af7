package proxmox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/state"
)

// Two states that applied one manifest at once end with its VMs split
// between them, and every re-run of either fails on the other's VMs,
// naming the way out: adopting them. Adoption is refused while the other
// state is locked (its apply runs) and for a VM that state does not own;
// once done, the other state has forgotten them and this state's apply
// converges: each VM once, running, plan empty.
func TestAdoptAfterTwoStoresRace(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	ctx := ctxT(t)
	stA, stB := state.NewMemory(), state.NewMemory()
	a := engineWithStore(t, newProvider(t, srv, nil), stA)
	b := engineWithStore(t, newProvider(t, srv, nil), stB)
	var all []*manifest.Resource
	for _, n := range []string{"vm-0", "vm-1", "vm-2", "vm-3"} {
		all = append(all, vm(n, nil))
	}
	// What the race left: each state won two of the names.
	_, err := a.Apply(ctx, all[:2]...)
	require.NoError(t, err)
	_, err = b.Apply(ctx, all[2:]...)
	require.NoError(t, err)
	_, err = a.Apply(ctx, all...)
	require.ErrorIs(t, err, errcode.AlreadyExists)
	assert.ErrorContains(t, err, "belongs to another openctl state")
	assert.ErrorContains(t, err, "openctl state adopt --from <that state's DSN or file:DIR> vm/vm-2")
	_, err = b.Apply(ctx, all...)
	require.ErrorIs(t, err, errcode.AlreadyExists)

	// Refused while the other state is locked.
	unlock, err := stB.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	_, err = a.Adopt(ctx, stB, vmID("vm-2"))
	require.ErrorIs(t, err, errcode.Conflict)
	assert.ErrorContains(t, err, "the other state")
	require.NoError(t, unlock())
	// Refused for a VM the other state does not own.
	_, err = a.Adopt(ctx, stB, vmID("vm-0"))
	require.NoError(t, err, "adopting one's own VM changes nothing")
	c := engineWithStore(t, newProvider(t, srv, nil), state.NewMemory())
	_, err = c.Adopt(ctx, stB, vmID("vm-0"))
	require.ErrorIs(t, err, errcode.AlreadyExists, "vm-0 is A's, not B's")

	adopted, err := a.Adopt(ctx, stB, vmID("vm-2"), vmID("vm-3"))
	require.NoError(t, err)
	require.Len(t, adopted, 2)
	for _, n := range []string{"vm-2", "vm-3"} {
		_, err := stB.Get(ctx, vmID(n))
		assert.ErrorIs(t, err, errcode.NotFound, "%s: the other state forgot it", n)
		_, err = stA.Get(ctx, vmID(n))
		assert.NoError(t, err, "%s: recorded here", n)
	}

	_, err = a.Apply(ctx, all...)
	require.NoError(t, err, "this state's apply converges")
	plan, err := a.Plan(ctx, all...)
	require.NoError(t, err)
	assert.False(t, plan.HasChanges())
	count := map[string]int{}
	for _, v := range srv.VMs() {
		if !v.Template {
			count[v.Name]++
			assert.True(t, v.Running, v.Name)
		}
	}
	assert.Equal(t, map[string]int{"vm-0": 1, "vm-1": 1, "vm-2": 1, "vm-3": 1}, count)
}
