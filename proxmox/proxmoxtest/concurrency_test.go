package proxmoxtest_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentClones: twenty parallel clones of one stopped template all
// succeed (it is locked shared), each with its own MAC.
func TestConcurrentClones(t *testing.T) {
	srv, c := newSim(t)
	ctx := simCtx(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			vm := c.NodeRef("pve1").VirtualMachineRef(9000)
			_, task, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100 + i, Name: fmt.Sprintf("web%d", i)})
			if err == nil {
				err = task.Wait(ctx, 10*time.Millisecond, 20*time.Second)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "clone %d", i)
	}
	macs := map[string]bool{}
	for _, v := range srv.VMs() {
		assert.Empty(t, v.Lock)
		macs[v.Config["net0"]] = true
	}
	assert.Len(t, macs, n+1)
	id, err := mustCluster(t, c).NextID(ctx)
	require.NoError(t, err)
	assert.Equal(t, 100+n, id)
}

// TestNextIDRace: nextid reserves nothing, so two callers get the same id
// and the second clone fails (BEHAVIOUR.md "VMIDs and cloning").
func TestNextIDRace(t *testing.T) {
	_, c := newSim(t)
	ctx := simCtx(t)
	cl := mustCluster(t, c)
	a, err := cl.NextID(ctx)
	require.NoError(t, err)
	b, err := cl.NextID(ctx)
	require.NoError(t, err)
	require.Equal(t, a, b)
	_, _, err = tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: a})
	require.NoError(t, err)
	_, _, err = tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: b})
	requireAPIError(t, err, 500, fmt.Sprintf("unable to create VM %d: config file already exists", b))
}

func mustCluster(t *testing.T, c *proxmox.Client) *proxmox.Cluster {
	t.Helper()
	cl, err := c.Cluster(simCtx(t))
	require.NoError(t, err)
	return cl
}

// TestCloneRunningSourceIsExclusive: a running source is locked exclusively
// for its clone, so a second clone times out on the lock.
func TestCloneRunningSourceIsExclusive(t *testing.T) {
	lat := fastLatencies
	lat.Clone = time.Second
	_, c := newSim(t, proxmoxtest.WithLatencies(lat))
	ctx := simCtx(t)
	vm := cloneAndWait(t, ctx, c, 100, "src")
	task, err := vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	_, first, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	require.NoError(t, err)
	_, _, err = vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102})
	requireAPIError(t, err, 500, "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout")
	require.NoError(t, waitTask(t, ctx, first))
	_, second, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102})
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, second))
}
