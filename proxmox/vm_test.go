package proxmox_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func TestApplyCreatesRunningVMWithAddressAndHostKey(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var steps []string
	res, err := e.p.Apply(withSteps(ctx, &steps), vm("web-01", map[string]any{
		"tags":        []any{"web"},
		"description": "front end",
		"disks":       []any{map[string]any{"name": "scsi0", "size": "20G"}},
	}))
	require.NoError(t, err)

	vmid := int(status(t, res, "vmid").(int64))
	assert.Equal(t, "pve1", status(t, res, "node"))
	assert.Equal(t, "running", status(t, res, "state"))
	ip := status(t, res, "ip").(string)
	assert.NotEmpty(t, ip)
	assert.NotContains(t, ip, "127.0.0.1")

	sim, ok := e.srv.VM(vmid)
	require.True(t, ok)
	assert.True(t, sim.Running)
	assert.Equal(t, "web-01", sim.Name)
	assert.Equal(t, "2", sim.Config["cores"])
	assert.Equal(t, "2048", sim.Config["memory"])
	assert.Equal(t, "openctl;web", sim.Config["tags"])
	assert.True(t, strings.HasPrefix(sim.Config["description"], "front end\n\nmanaged-by: openctl"), sim.Config["description"])
	assert.Contains(t, sim.Config["scsi0"], "size=20G")

	key, ok := e.srv.HostKey(vmid)
	require.True(t, ok)
	// The guest's file includes a comment after the key.
	assert.True(t, strings.HasPrefix(status(t, res, "sshHostKey").(string), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))+" "))
	assert.Contains(t, steps, "waiting for guest agent")
	assert.Contains(t, steps, "starting")

	got, err := e.p.Get(ctx, vmID("web-01"))
	require.NoError(t, err)
	assert.Equal(t, res.Status["ip"], got.Status["ip"])
	assert.Equal(t, true, got.Status["managed"])
	assert.Equal(t, int64(2), mustField(t, got.Spec, "cpu.cores"))
	assert.Equal(t, "ubuntu-24.04-cloud", mustField(t, got.Spec, "template.name"))
	assert.Equal(t, "front end", got.Spec["description"])
}

func TestSecondApplyIsReadOnly(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	r := vm("web-01", nil)
	first, err := e.p.Apply(ctx, r)
	require.NoError(t, err)
	before := writes(e.srv)
	second, err := e.p.Apply(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, before, writes(e.srv), "an unchanged VM must not be written to")
	assert.Equal(t, first.Status["vmid"], second.Status["vmid"])
	assert.Len(t, guests(e.srv), 1)
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	t.Run("kit", func(t *testing.T) { conformance(t, e) })
	assert.Empty(t, guests(e.srv), "conformance must leave nothing behind")
}

func conformance(t *testing.T, e *env) {
	providertest.RunConformance(t, e.p, providertest.Options{
		NewResource: func(name string) *manifest.Resource { return vm(name, nil) },
		Mutate: func(r *manifest.Resource) *manifest.Resource {
			c := r.DeepCopy()
			c.Spec["memory"] = map[string]any{"size": int64(4096)}
			return c
		},
		Parallel: 4,
	})
}

func TestUnmanagedVMWithSameNameIsNotAdopted(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	_, err := e.p.Apply(ctx, vm("web-01", nil))
	require.NoError(t, err)
	v := guests(e.srv)["web-01"]
	// Someone removes openctl's marker: the VM is no longer ours.
	require.NoError(t, e.srv.SetConfig(v.VMID, "description", "hand-made"))

	_, err = e.p.Apply(ctx, vm("web-01", nil))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%v", err)
	assert.Contains(t, err.Error(), "did not create")

	err = e.p.Delete(ctx, vmID("web-01"))
	require.Error(t, err, "an unmanaged VM must not be deleted")
	assert.Len(t, guests(e.srv), 1)
}

func mustField(t *testing.T, m map[string]any, path string) any {
	t.Helper()
	v, ok, err := manifest.Field(m, path)
	require.NoError(t, err)
	require.True(t, ok, "%s missing in %v", path, m)
	return v
}

// TestDeleteStopsWhenShutdownFails: a graceful shutdown that does
// not work (here its task fails with a lock timeout) is followed by a
// stop, then the destroy — every task awaited.
//
// The simulator ignores the shutdown's timeout parameter (real Proxmox
// fails the qmshutdown task with "got timeout" after it), so a shutdown
// that outlasts Timeouts.Shutdown cannot be simulated; the test checks
// the timeout is passed on and the fallback after a failed shutdown.
func TestDeleteStopsWhenShutdownFails(t *testing.T) {
	var mu sync.Mutex
	var shutdownParams, deleteParams map[string]string
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies), proxmoxtest.WithFaults(proxmoxtest.Faults{
		Routes: []string{"POST /nodes/{node}/qemu/{vmid}/status/shutdown"}, LockTimeoutRate: 1,
	}), proxmoxtest.WithRequestHook(func(ri proxmoxtest.RequestInfo) {
		mu.Lock()
		defer mu.Unlock()
		switch ri.Route {
		case "POST /nodes/{node}/qemu/{vmid}/status/shutdown":
			shutdownParams = ri.Params
		case "DELETE /nodes/{node}/qemu/{vmid}":
			deleteParams = ri.Params
		}
	}))
	p := newProvider(t, srv, func(c *proxmox.Config) { c.Timeouts.Shutdown = 7 * time.Second })
	ctx := ctxT(t)
	_, err := p.Apply(ctx, vm("web-01", nil))
	require.NoError(t, err)
	var steps []string
	require.NoError(t, p.Delete(withSteps(ctx, &steps), vmID("web-01")))
	assert.Equal(t, []string{"shutting down", "stopping", "destroying"}, steps)
	assert.Empty(t, guests(srv))
	assert.Equal(t, 1, srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/status/stop"))
	assert.Equal(t, 1, srv.RequestCount("DELETE /nodes/{node}/qemu/{vmid}"))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "7", shutdownParams["timeout"])
	assert.Equal(t, "1", deleteParams["purge"])
	assert.Equal(t, "1", deleteParams["destroy-unreferenced-disks"])
}

// TestUnmanagedVMs: VMs openctl did not create are listed and read
// (status.managed false) but never changed, acted on or deleted; a clone
// in progress (no name yet) is not listed.
func TestUnmanagedVMs(t *testing.T) {
	lat := fastLatencies
	e := newEnv(t, proxmoxtest.WithLatencies(lat))
	ctx := ctxT(t)
	_, err := e.p.Apply(ctx, vm("mine", nil))
	require.NoError(t, err)
	_, err = e.p.Apply(ctx, vm("theirs", map[string]any{"description": "hand made"}))
	require.NoError(t, err)
	theirs := guests(e.srv)["theirs"]
	require.NoError(t, e.srv.SetConfig(theirs.VMID, "description", "hand made"))
	require.NoError(t, e.srv.SetConfig(theirs.VMID, "tags", "prod"))

	got, err := e.p.Get(ctx, vmID("theirs"))
	require.NoError(t, err)
	assert.Equal(t, false, got.Status["managed"])
	assert.Equal(t, "hand made", got.Spec["description"])
	assert.Equal(t, []any{"prod"}, got.Spec["tags"])
	assert.Nil(t, got.Spec["template"])

	list, err := e.p.List(ctx, proxmox.KindVirtualMachine)
	require.NoError(t, err)
	managed := map[string]any{}
	for _, r := range list {
		managed[r.Metadata.Name] = r.Status["managed"]
	}
	assert.Equal(t, map[string]any{"mine": true, "theirs": false}, managed)

	before := writes(e.srv)
	_, err = e.p.Do(ctx, registry.ActionRequest{Action: "stop", ID: vmID("theirs"), Out: &bytes.Buffer{}})
	require.Error(t, err)
	assert.Error(t, e.p.Delete(ctx, vmID("theirs")))
	_, err = e.p.Apply(ctx, vm("theirs", nil))
	assert.True(t, errcode.Is(err, errcode.AlreadyExists), "%v", err)
	assert.Equal(t, before, writes(e.srv))
	assert.True(t, guests(e.srv)["theirs"].Running)
}
