package proxmoxtest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSyncErrors asserts the errors Proxmox answers synchronously, each seen
// through go-proxmox's *proxmox.APIError (BEHAVIOUR.md; PVE/API2/Qemu.pm).
func TestSyncErrors(t *testing.T) {
	slowAgent := fastLatencies
	slowAgent.AgentUp = time.Hour
	srv, c := newSim(t, proxmoxtest.WithNodes(2), proxmoxtest.WithLatencies(slowAgent))
	ctx := simCtx(t)
	running := cloneAndWait(t, ctx, c, 100, "running")
	task, err := running.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	stopped := cloneAndWait(t, ctx, c, 101, "stopped")
	pve1 := c.NodeRef("pve1")

	tests := []struct {
		name   string
		call   func(ctx context.Context) error
		status int
		msg    string
		param  string // for 400: the key in APIError.Errors
	}{
		{"missing VM", func(ctx context.Context) error {
			_, err := pve1.VirtualMachine(ctx, 4242)
			return err
		}, 500, "Configuration file 'nodes/pve1/qemu-server/4242.conf' does not exist", ""},
		{"VM on another node", func(ctx context.Context) error {
			_, err := c.NodeRef("pve2").VirtualMachine(ctx, 100)
			return err
		}, 500, "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist", ""},
		{"delete running VM", func(ctx context.Context) error {
			_, err := running.Delete(ctx, nil)
			return err
		}, 500, "VM 100 is running - destroy failed", ""},
		{"clone onto existing VMID", func(ctx context.Context) error {
			_, _, err := stopped.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100})
			return err
		}, 500, "unable to create VM 100: config file already exists", ""},
		{"storage with linked clone", func(ctx context.Context) error {
			_, _, err := pve1.VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 200, Storage: "local-lvm"})
			return err
		}, 400, "Parameter verification failed.", "storage"},
		{"clone to another node from local storage", func(ctx context.Context) error {
			_, _, err := pve1.VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 200, Target: "pve2"})
			return err
		}, 500, "can't clone VM to node 'pve2' (VM uses local storage)", ""},
		{"linked clone of a VM that is no template", func(ctx context.Context) error {
			// go-proxmox omits Full: false (omitempty), so full=0 goes directly.
			return c.Post(ctx, "/nodes/pve1/qemu/101/clone", map[string]any{"newid": 200, "full": 0}, new(string))
		}, 500, "Linked clone feature is not supported for drive 'scsi0'", ""},
		{"nextid with a taken vmid", func(ctx context.Context) error {
			return c.Get(ctx, "/cluster/nextid?vmid=9000", new(string))
		}, 400, "Parameter verification failed.", "vmid"},
		{"reboot a stopped VM", func(ctx context.Context) error {
			_, err := stopped.Reboot(ctx)
			return err
		}, 500, "VM 101 not running", ""},
		{"template of a running VM", func(ctx context.Context) error {
			_, err := running.ConvertToTemplate(ctx)
			return err
		}, 500, "you can't convert a VM to template if VM is running", ""},
		{"unknown config key", func(ctx context.Context) error {
			return stopped.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "bogus", Value: 1})
		}, 400, "Parameter verification failed.", "bogus"},
		{"sshkeys not URL-encoded", func(ctx context.Context) error {
			return stopped.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "sshkeys", Value: "ssh-ed25519 AAAA x"})
		}, 400, "Parameter verification failed.", "sshkeys"},
		{"agent on a stopped VM", func(ctx context.Context) error {
			_, err := stopped.AgentOsInfo(ctx)
			return err
		}, 500, "VM 101 is not running", ""},
		{"agent not up yet", func(ctx context.Context) error {
			_, err := running.AgentGetNetworkIFaces(ctx)
			return err
		}, 500, "QEMU guest agent is not running", ""},
		{"unserved route", func(ctx context.Context) error {
			return c.Get(ctx, "/nodes/pve1/lxc", new([]any))
		}, 501, "Method 'GET /nodes/pve1/lxc' not implemented", ""},
		{"unknown node", func(ctx context.Context) error {
			_, err := c.NodeRef("pve9").VirtualMachines(ctx)
			return err
		}, 500, "hostname lookup 'pve9' failed - failed to get address info for: pve9: Name or service not known", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiErr := requireAPIError(t, tt.call(ctx), tt.status, tt.msg)
			if tt.param != "" {
				assert.Contains(t, apiErr.Errors, tt.param)
				assert.ErrorIs(t, apiErr, proxmox.ErrBadRequest)
			}
		})
	}
	assert.Equal(t, "VM 9000 already exists", func() string {
		err := c.Get(ctx, "/cluster/nextid?vmid=9000", new(string))
		a, _ := proxmox.AsAPIError(err)
		return a.Errors["vmid"]
	}())
	_, ok := srv.VM(200)
	assert.False(t, ok, "a refused clone leaves no target")
}

func TestAgentNotConfigured(t *testing.T) {
	_, c := newSim(t)
	ctx := simCtx(t)
	vm := cloneAndWait(t, ctx, c, 100, "noagent")
	require.NoError(t, vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "delete", Value: "agent"}))
	task, err := vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	_, err = vm.AgentGetNetworkIFaces(ctx)
	requireAPIError(t, err, 500, "No QEMU guest agent configured")
	// WaitForAgent gives up at once: waiting can never succeed.
	requireAPIError(t, vm.WaitForAgent(ctx, 5), 500, "No QEMU guest agent configured")
}

// TestCloneLock: while the clone task runs the target holds "lock: clone";
// config fails synchronously and start inside its task.
func TestCloneLock(t *testing.T) {
	srv, c := newSim(t, proxmoxtest.WithLatencies(proxmoxtest.Latencies{Clone: 2 * time.Second}))
	ctx := simCtx(t)
	_, cloneTask, err := tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100})
	require.NoError(t, err)
	target := c.NodeRef("pve1").VirtualMachineRef(100)

	requireAPIError(t, target.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "cores", Value: 2}), 500, "VM is locked (clone)")
	_, err = target.Config(ctx, proxmox.VirtualMachineOption{Name: "cores", Value: 2})
	requireAPIError(t, err, 500, "VM is locked (clone)")
	startTask, err := target.Start(ctx)
	require.NoError(t, err, "start failures surface inside the task")
	requireTaskFailed(t, waitTask(t, ctx, startTask), "VM is locked (clone)")
	// Cloning the half-made target is refused by the source lock check.
	_, _, err = target.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	requireAPIError(t, err, 500, "VM is locked (clone)")

	// The clone holds the source's config lock (shared, as the source is
	// stopped): a writer times out, another clone is let through below.
	requireAPIError(t, tmplVM(t, ctx, c).ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "description", Value: "x"}),
		500, "can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout")

	require.NoError(t, srv.SetLock(9000, "backup"))
	_, _, err = tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102})
	requireAPIError(t, err, 500, "VM is locked (backup)")
	require.NoError(t, srv.SetLock(9000, ""))

	require.NoError(t, waitTask(t, ctx, cloneTask))
	v, _ := srv.VM(100)
	assert.Empty(t, v.Lock)
	assert.Equal(t, "Copy-of-VM-ubuntu-24.04-cloud", v.Name)
}

func TestCloneFailureRemovesTarget(t *testing.T) {
	srv, c := newSim(t, proxmoxtest.WithFaults(proxmoxtest.Faults{TaskFailureRate: 1}))
	ctx := simCtx(t)
	_, task, err := tmplVM(t, ctx, c).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100})
	require.NoError(t, err)
	_, ok := srv.VM(100)
	require.True(t, ok)
	requireTaskFailed(t, waitTask(t, ctx, task), "simulated task failure (fault injection)")
	_, ok = srv.VM(100)
	assert.False(t, ok)
}

func TestTaskFailures(t *testing.T) {
	_, c := newSim(t)
	ctx := simCtx(t)
	vm := cloneAndWait(t, ctx, c, 100, "a")
	tests := []struct {
		name string
		call func() (*proxmox.Task, error)
		exit string
	}{
		{"start a template", func() (*proxmox.Task, error) { return tmplVM(t, ctx, c).Start(ctx) }, "you can't start a vm if it's a template"},
		{"shrink a disk", func() (*proxmox.Task, error) { return vm.ResizeDisk(ctx, "scsi0", "5G") }, "shrinking disks is not supported"},
		{"shutdown a stopped VM", func() (*proxmox.Task, error) { return vm.Shutdown(ctx) }, "VM 100 not running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task, err := tt.call()
			require.NoError(t, err)
			requireTaskFailed(t, waitTask(t, ctx, task), tt.exit)
		})
	}
	task, err := vm.ResizeDisk(ctx, "scsi0", "+5G")
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	require.NoError(t, vm.Ping(ctx))
	assert.Contains(t, vm.VirtualMachineConfig.SCSIs["scsi0"], "size=15G")
}

func TestAuth(t *testing.T) {
	srv, _ := newSim(t)
	ctx := simCtx(t)
	bad := simClient(srv, func() (string, string) { return proxmoxtest.DefaultTokenID, "wrong" })
	_, err := bad.Version(ctx)
	apiErr := requireAPIError(t, err, http.StatusUnauthorized, "invalid token value!")
	assert.ErrorIs(t, apiErr, proxmox.ErrNotAuthorized)

	secret, err := srv.AddToken("audit@pve!ro", "VM.Audit")
	require.NoError(t, err)
	ro := simClient(srv, func() (string, string) { return "audit@pve!ro", secret })
	vm, err := ro.NodeRef("pve1").VirtualMachine(ctx, 9000)
	require.NoError(t, err)
	_, err = vm.Start(ctx)
	apiErr = requireAPIError(t, err, http.StatusForbidden, "Permission check failed (/vms/9000, VM.PowerMgmt)")
	assert.ErrorIs(t, apiErr, proxmox.ErrForbidden)
}
