package proxmoxtest_test

import (
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failurePattern calls GET /version n times and records which failed.
func failurePattern(t *testing.T, seed int64, n int) []bool {
	_, c := newSim(t, proxmoxtest.WithSeed(seed), proxmoxtest.WithFaults(proxmoxtest.Faults{
		Routes: []string{"GET /version"}, ErrorRate: 0.3,
	}))
	ctx := simCtx(t)
	out := make([]bool, n)
	for i := range out {
		_, err := c.Version(ctx)
		if err != nil {
			requireAPIError(t, err, 500, "simulated server error (fault injection)")
		}
		out[i] = err != nil
	}
	// Other routes are untouched.
	_, err := c.Nodes(ctx)
	require.NoError(t, err)
	return out
}

func TestFaultsReproducible(t *testing.T) {
	a := failurePattern(t, 42, 60)
	b := failurePattern(t, 42, 60)
	c := failurePattern(t, 43, 60)
	assert.Equal(t, a, b, "same seed, same failures")
	assert.NotEqual(t, a, c, "another seed, other failures")
	failed := 0
	for _, f := range a {
		if f {
			failed++
		}
	}
	assert.InDelta(t, 18, failed, 12)
}

func TestLockTimeoutFault(t *testing.T) {
	_, c := newSim(t, proxmoxtest.WithFaults(proxmoxtest.Faults{LockTimeoutRate: 1}))
	ctx := simCtx(t)
	_, _, err := tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100})
	requireAPIError(t, err, 500, "can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout")
}

// TestTaskStatusLost: go-proxmox falls back to the node task list when a
// task's status is gone (BEHAVIOUR.md "Tasks").
func TestTaskStatusLost(t *testing.T) {
	srv, c := newSim(t, proxmoxtest.WithFaults(proxmoxtest.Faults{TaskStatusLostRate: 1, TaskFailureRate: 0}))
	ctx := simCtx(t)
	_, task, err := tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100})
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	assert.Positive(t, srv.RequestCount("GET /nodes/{node}/tasks"))
	_, err = task.Log(ctx, 0, 10)
	requireAPIError(t, err, 500, "no such task")

	start, err := tmplVM(t, ctx, c).Start(ctx)
	require.NoError(t, err)
	requireTaskFailed(t, waitTask(t, ctx, start), "you can't start a vm if it's a template")
}
