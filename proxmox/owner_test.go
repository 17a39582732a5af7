package proxmox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func owned(t testing.TB, owner string) context.Context {
	return registry.WithCall(ctxT(t), registry.Call{Owner: owner})
}

// TestOwnersRaceForOneName (issue 12 item 3): two openctl processes with
// different state stores (two providers, two owners) apply the same name
// at once, 20 times. Each time exactly one VM of that name remains,
// marked with the winner's owner and running; exactly one Apply succeeds
// and the other is ALREADY_EXISTS. Before, both cloned and often both
// succeeded, and every later call failed with "several VMs are named".
func TestOwnersRaceForOneName(t *testing.T) {
	// 4 simulators side by side, 5 trials each: 20 trials in the time of 5.
	for sim := range 4 {
		t.Run(fmt.Sprintf("sim-%d", sim), func(t *testing.T) {
			t.Parallel()
			srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
			for i := range 5 {
				raceOnce(t, srv, fmt.Sprintf("race-%02d", i))
			}
			// More clones than trials: both racers cloned, and the loser
			// removed its clone (the rest found the winner's clone running
			// and waited for it).
			t.Logf("5 trials, %d clones", srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/clone"))
		})
	}
}

// raceOnce has two providers with different owners apply name at once.
func raceOnce(t *testing.T, srv *proxmoxtest.Server, name string) {
	owners := []string{"store-a", "store-b"}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	start := make(chan struct{})
	for j, owner := range owners {
		p := newProvider(t, srv, nil) // a process of its own
		wg.Go(func() {
			<-start
			_, errs[j] = p.Apply(owned(t, owner), vm(name, nil))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for j, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "%s: both applies succeeded", name)
			winner = j
			continue
		}
		assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%s: %v", name, err)
		assert.NotContains(t, err.Error(), "state lock")
	}
	require.NotEqual(t, -1, winner, "%s: neither apply succeeded: %v", name, errs)
	var same []proxmoxtest.VM
	for _, v := range srv.VMs() {
		if v.Name == name {
			same = append(same, v)
		}
	}
	require.Len(t, same, 1, "%s: exactly one VM", name)
	assert.Contains(t, same[0].Config["description"], "owner="+owners[winner])
	assert.True(t, same[0].Running)
}

// TestOtherOwnersVMIsNeverTouched: a VM whose marker names another owner
// is ALREADY_EXISTS for Apply, Delete and actions, with a message that
// says so; one marked before owners were recorded is adopted and gets
// the owner written.
func TestOtherOwnersVMIsNeverTouched(t *testing.T) {
	e := newEnv(t)
	_, err := e.p.Apply(owned(t, "store-a"), vm("web-01", nil))
	require.NoError(t, err)
	before := writes(e.srv)

	b := newProvider(t, e.srv, nil)
	r := vm("web-01", map[string]any{"cpu": map[string]any{"cores": int64(4)}})
	_, err = b.Apply(owned(t, "store-b"), r)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%v", err)
	assert.Contains(t, err.Error(), "belongs to another openctl state (owner store-a")
	err = b.Delete(owned(t, "store-b"), vmID("web-01"))
	assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%v", err)
	_, err = b.Do(owned(t, "store-b"), registry.ActionRequest{ID: vmID("web-01"), Action: "stop"})
	assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%v", err)
	assert.Equal(t, before, writes(e.srv), "nothing written")
	assert.True(t, guests(e.srv)["web-01"].Running)

	// A marker without an owner (an older openctl) is adopted.
	id := guests(e.srv)["web-01"].VMID
	desc := guests(e.srv)["web-01"].Config["description"]
	require.NoError(t, e.srv.SetConfig(id, "description", strings.Replace(desc, "; owner=store-a", "", 1)))
	_, err = b.Apply(owned(t, "store-b"), r)
	require.NoError(t, err)
	assert.Contains(t, guests(e.srv)["web-01"].Config["description"], "; owner=store-b")
}

// TestDuplicateNamesAreToldApartByOwner: two VMs of one name, each marked
// with its own owner (what a race leaves when a loser could not remove
// its clone), no longer fail everything with "several VMs are named":
// each state finds its own.
func TestDuplicateNamesAreToldApartByOwner(t *testing.T) {
	e := newEnv(t)
	a, err := e.p.Apply(owned(t, "store-a"), vm("web-01", nil))
	require.NoError(t, err)
	b, err := e.p.Apply(owned(t, "store-b"), vm("web-02", nil))
	require.NoError(t, err)
	require.NoError(t, e.srv.SetConfig(int(b.Status["vmid"].(int64)), "name", "web-01"))

	for owner, want := range map[string]any{"store-a": a.Status["vmid"], "store-b": b.Status["vmid"]} {
		got, err := e.p.Get(owned(t, owner), vmID("web-01"))
		require.NoError(t, err, owner)
		assert.Equal(t, want, got.Status["vmid"], owner)
		_, err = e.p.Apply(owned(t, owner), vm("web-01", nil))
		require.NoError(t, err, owner)
	}
	_, err = e.p.Get(owned(t, "store-c"), vmID("web-01"))
	assert.True(t, errcode.Is(err, errcode.AlreadyExists) || err == nil, "%v", err)
}

// TestTwoStoresOneVMPerName: two engines with different state stores
// (two CI runners configured differently) against one Proxmox: the first
// creates the VM; the second gets ALREADY_EXISTS naming the other state,
// creates nothing and cannot delete the first one's VM. The engine hands
// each store's identity to the provider (registry.Call.Owner).
func TestTwoStoresOneVMPerName(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	a := engineWithStore(t, newProvider(t, srv, nil), state.NewMemory())
	b := engineWithStore(t, newProvider(t, srv, nil), state.NewMemory())

	rep, err := a.Apply(ctxT(t), vm("shared-01", nil))
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeCreated))

	rep, err = b.Apply(ctxT(t), vm("shared-01", nil))
	require.Error(t, err)
	res, _ := rep.Result(vmID("shared-01"))
	assert.True(t, errcode.Is(res.Err, errcode.AlreadyExists), "%v", res.Err)
	assert.NotContains(t, res.Err.Error(), "state lock")

	_, err = b.Delete(ctxT(t), vmID("shared-01"))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%v", err)

	var named []proxmoxtest.VM
	for _, v := range srv.VMs() {
		if v.Name == "shared-01" {
			named = append(named, v)
		}
	}
	require.Len(t, named, 1, "one VM per name")
	assert.True(t, named[0].Running)

	plan, err := a.Plan(ctxT(t), vm("shared-01", nil))
	require.NoError(t, err)
	assert.False(t, plan.HasChanges(), "the owner's plan is a no-op")
}
