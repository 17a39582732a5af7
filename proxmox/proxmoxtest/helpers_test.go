package proxmoxtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/require"
)

// fast are latencies short enough for unit tests but long enough to observe
// the in-between states (clone lock, agent not up, only lo).
var fastLatencies = proxmoxtest.Latencies{
	Clone:    80 * time.Millisecond,
	Config:   10 * time.Millisecond,
	Start:    30 * time.Millisecond,
	Stop:     20 * time.Millisecond,
	Shutdown: 20 * time.Millisecond,
	Reboot:   20 * time.Millisecond,
	Destroy:  20 * time.Millisecond,
	Template: 20 * time.Millisecond,
	Resize:   10 * time.Millisecond,
	AgentUp:  300 * time.Millisecond,
	AgentIP:  300 * time.Millisecond,
}

func newSim(t *testing.T, opts ...proxmoxtest.Option) (*proxmoxtest.Server, *proxmox.Client) {
	t.Helper()
	srv := proxmoxtest.NewTestServer(t, append([]proxmoxtest.Option{proxmoxtest.WithLatencies(fastLatencies)}, opts...)...)
	return srv, simClient(srv, srv.Token)
}

func simClient(srv *proxmoxtest.Server, token func() (string, string)) *proxmox.Client {
	id, secret := token()
	return proxmox.NewClient(srv.URL(), proxmox.WithHTTPClient(srv.Client()), proxmox.WithAPIToken(id, secret))
}

func simCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitTask(t *testing.T, ctx context.Context, task *proxmox.Task) error {
	t.Helper()
	require.NotNil(t, task)
	return task.Wait(ctx, 10*time.Millisecond, 20*time.Second)
}

func requireAPIError(t *testing.T, err error, status int, msg string) *proxmox.APIError {
	t.Helper()
	require.Error(t, err)
	apiErr, ok := proxmox.AsAPIError(err)
	require.True(t, ok, "want *proxmox.APIError, got %T: %v", err, err)
	require.Equal(t, status, apiErr.StatusCode, "error: %v", err)
	require.Equal(t, msg, apiErr.Message, "error: %v", err)
	return apiErr
}

func requireTaskFailed(t *testing.T, err error, exit string) {
	t.Helper()
	var tf *proxmox.TaskFailedError
	require.True(t, errors.As(err, &tf), "want *proxmox.TaskFailedError, got %T: %v", err, err)
	require.Equal(t, exit, tf.ExitStatus)
}

// template returns the seeded template VM 9000.
func tmplVM(t *testing.T, ctx context.Context, c *proxmox.Client) *proxmox.VirtualMachine {
	t.Helper()
	vm, err := c.NodeRef("pve1").VirtualMachine(ctx, 9000)
	require.NoError(t, err)
	return vm
}

// cloneWait clones the template to newid and waits for the task.
func cloneAndWait(t *testing.T, ctx context.Context, c *proxmox.Client, newid int, name string) *proxmox.VirtualMachine {
	t.Helper()
	_, task, err := tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: newid, Name: name})
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	vm, err := c.NodeRef("pve1").VirtualMachine(ctx, newid)
	require.NoError(t, err)
	return vm
}
