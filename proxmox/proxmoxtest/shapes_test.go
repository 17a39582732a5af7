package proxmoxtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawGet returns the decoded "data" of a GET.
func rawGet(t *testing.T, srv *proxmoxtest.Server, path string) any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
	require.NoError(t, err)
	id, secret := srv.Token()
	req.Header.Set("Authorization", "PVEAPIToken="+id+"="+secret)
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	var env map[string]any
	require.NoError(t, json.Unmarshal(body, &env))
	return env["data"]
}

// TestResponseShapes: JSON types as PVE renders them (BEHAVIOUR.md "Wire
// format"): nextid a string, integers and booleans numbers, memory a
// string, template/lock/tags only when set.
func TestResponseShapes(t *testing.T) {
	srv, c := newSim(t)
	ctx := simCtx(t)
	assert.Equal(t, "100", rawGet(t, srv, "/cluster/nextid"))

	tmpl := rawGet(t, srv, "/nodes/pve1/qemu/9000/config").(map[string]any)
	assert.Equal(t, float64(1), tmpl["template"])
	assert.Equal(t, float64(2), tmpl["cores"])
	assert.Equal(t, "2048", tmpl["memory"])
	assert.Equal(t, "1", tmpl["agent"])
	assert.Equal(t, "local-lvm:vm-9000-cloudinit,media=cdrom", tmpl["ide2"])
	assert.Contains(t, tmpl, "digest")

	vm := cloneAndWait(t, ctx, c, 100, "a")
	require.NoError(t, vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "tags", Value: "web;db;web"}))
	cfg := rawGet(t, srv, "/nodes/pve1/qemu/100/config").(map[string]any)
	assert.NotContains(t, cfg, "template")
	assert.NotContains(t, cfg, "lock")
	assert.Equal(t, "db;web", cfg["tags"])
	cur := rawGet(t, srv, "/nodes/pve1/qemu/100/status/current").(map[string]any)
	assert.NotContains(t, cur, "template")
	assert.NotContains(t, cur, "lock")
	assert.Equal(t, "stopped", cur["status"])
	assert.Equal(t, float64(100), cur["vmid"])

	nets := rawGet(t, srv, "/nodes/pve1/network?type=bridge").([]any)
	require.Len(t, nets, 1)
	assert.Equal(t, "vmbr0", nets[0].(map[string]any)["iface"])
	storages, err := c.NodeRef("pve1").Storages(ctx)
	require.NoError(t, err)
	require.Len(t, storages, 2)
	assert.Equal(t, "local", storages[0].Name)
	assert.Equal(t, "local-lvm", storages[1].Name)
}

// TestStaticIP: the agent reports ipconfig0's static address.
func TestStaticIP(t *testing.T) {
	lat := fastLatencies
	lat.AgentUp, lat.AgentIP = 0, 0
	_, c := newSim(t, proxmoxtest.WithLatencies(lat))
	ctx := simCtx(t)
	vm := cloneAndWait(t, ctx, c, 100, "static")
	require.NoError(t, vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "ipconfig0", Value: "ip=192.0.2.10/24,gw=192.0.2.1"}))
	task, err := vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	ifaces, err := vm.AgentGetNetworkIFaces(ctx)
	require.NoError(t, err)
	require.Len(t, ifaces, 1)
	assert.Equal(t, "192.0.2.10", ifaces[0].IPAddresses[0].IPAddress)
	assert.Equal(t, 24, ifaces[0].IPAddresses[0].Prefix)

	apiErr := requireAPIError(t, vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "ipconfig0", Value: "ip=not-an-ip"}), 400, "Parameter verification failed.")
	assert.Contains(t, apiErr.Errors, "ipconfig0")
}

func TestRequestHookAndTaskFilters(t *testing.T) {
	var mu sync.Mutex
	var seen []proxmoxtest.RequestInfo
	srv, c := newSim(t, proxmoxtest.WithRequestHook(func(r proxmoxtest.RequestInfo) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
	}))
	ctx := simCtx(t)
	tmpl := tmplVM(t, ctx, c)
	task, err := tmpl.Start(ctx)
	require.NoError(t, err)
	require.Error(t, waitTask(t, ctx, task))
	cloneAndWait(t, ctx, c, 100, "a")

	failed, err := c.NodeRef("pve1").Tasks(ctx, &proxmox.NodeTasksOptions{Errors: true})
	require.NoError(t, err)
	require.Len(t, failed, 1)
	assert.Equal(t, "qmstart", failed[0].Type)
	clones, err := c.NodeRef("pve1").Tasks(ctx, &proxmox.NodeTasksOptions{TypeFilter: "qmclone", VMID: 9000})
	require.NoError(t, err)
	require.Len(t, clones, 1)

	mu.Lock()
	defer mu.Unlock()
	var clone *proxmoxtest.RequestInfo
	for i := range seen {
		if seen[i].Route == "POST /nodes/{node}/qemu/{vmid}/clone" {
			clone = &seen[i]
		}
	}
	require.NotNil(t, clone)
	assert.Equal(t, "100", clone.Params["newid"])
	assert.Equal(t, http.StatusOK, clone.Status)
	assert.Equal(t, 1, srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/clone"))
}

// TestTaskFailuresReproducible: the same seed fails the same tasks.
func TestTaskFailuresReproducible(t *testing.T) {
	pattern := func(seed int64) []bool {
		_, c := newSim(t, proxmoxtest.WithSeed(seed), proxmoxtest.WithFaults(proxmoxtest.Faults{TaskFailureRate: 0.5}))
		ctx := simCtx(t)
		var out []bool
		for i := range 12 {
			_, task, err := c.NodeRef("pve1").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100 + i})
			require.NoError(t, err)
			out = append(out, task.Wait(ctx, 10*time.Millisecond, 10*time.Second) != nil)
		}
		return out
	}
	assert.Equal(t, pattern(7), pattern(7))
}

func TestClusterResources(t *testing.T) {
	_, c := newSim(t, proxmoxtest.WithNodes(2))
	ctx := simCtx(t)
	cloneAndWait(t, ctx, c, 100, "web1")
	cl, err := c.Cluster(ctx)
	require.NoError(t, err)
	vms, err := cl.Resources(ctx, "vm")
	require.NoError(t, err)
	require.Len(t, vms, 2)
	assert.Equal(t, "qemu/100", vms[0].ID)
	assert.Equal(t, "web1", vms[0].Name)
	assert.Equal(t, "pve1", vms[0].Node)
	assert.EqualValues(t, 1, vms[1].Template)
	nodes, err := cl.Resources(ctx, "node")
	require.NoError(t, err)
	assert.Len(t, nodes, 2)
	all, err := cl.Resources(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 2+2+4)
}

// TestPendingWhileRunning: on a running VM, non-hotpluggable changes wait
// for the next start (BEHAVIOUR.md "Lifecycle").
func TestPendingWhileRunning(t *testing.T) {
	srv, c := newSim(t)
	ctx := simCtx(t)
	vm := cloneAndWait(t, ctx, c, 100, "a")
	task, err := vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	require.NoError(t, vm.ConfigSync(ctx,
		proxmox.VirtualMachineOption{Name: "memory", Value: "4096"},
		proxmox.VirtualMachineOption{Name: "description", Value: "now"}))
	v, _ := srv.VM(100)
	assert.Equal(t, "2048", v.Config["memory"], "memory is pending")
	assert.Equal(t, "now", v.Config["description"], "description applies at once")
	cfg := rawGet(t, srv, "/nodes/pve1/qemu/100/config").(map[string]any)
	assert.Equal(t, "4096", cfg["memory"], "GET config shows pending values")
	cur := rawGet(t, srv, "/nodes/pve1/qemu/100/config?current=1").(map[string]any)
	assert.Equal(t, "2048", cur["memory"])
	pending := rawGet(t, srv, "/nodes/pve1/qemu/100/pending").([]any)
	var mem map[string]any
	for _, p := range pending {
		if p.(map[string]any)["key"] == "memory" {
			mem = p.(map[string]any)
		}
	}
	require.NotNil(t, mem)
	assert.Equal(t, "4096", mem["pending"])

	task, err = vm.Reboot(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	v, _ = srv.VM(100)
	assert.Equal(t, "4096", v.Config["memory"], "applied at restart")
}

func TestWithTemplates(t *testing.T) {
	srv, c := newSim(t, proxmoxtest.WithNodes(2), proxmoxtest.WithTemplates(proxmoxtest.Template{VMID: 8000, Name: "debian-12", Node: "pve2"}))
	ctx := simCtx(t)
	vms := srv.VMs()
	require.Len(t, vms, 1)
	assert.Equal(t, "pve2", vms[0].Node)
	assert.True(t, vms[0].Template)
	_, err := c.NodeRef("pve2").VirtualMachineRef(8000).AgentOsInfo(ctx)
	requireAPIError(t, err, 500, "No QEMU guest agent configured")

	_, err = proxmoxtest.New(proxmoxtest.WithTemplates(proxmoxtest.Template{VMID: 8000, Node: "pve7"}))
	assert.Error(t, err)
}

// TestCloneToAnotherNode: allowed when the source's disks are on shared
// storage (PVE/API2/Qemu.pm clone_vm).
func TestCloneToAnotherNode(t *testing.T) {
	srv, c := newSim(t, proxmoxtest.WithNodes(2), proxmoxtest.WithSharedStorage("ceph"),
		proxmoxtest.WithTemplates(proxmoxtest.Template{VMID: 9000, Name: "tmpl", Agent: true, Storage: "ceph"}))
	ctx := simCtx(t)
	_, task, err := c.NodeRef("pve1").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 100, Target: "pve2"})
	require.NoError(t, err)
	assert.Equal(t, "pve1", task.Node, "the task runs on the source's node")
	require.NoError(t, waitTask(t, ctx, task))
	vm, err := c.NodeRef("pve2").VirtualMachine(ctx, 100)
	require.NoError(t, err)
	assert.Equal(t, "ceph:base-9000-disk-0/vm-100-disk-0,discard=on,size=10G", vm.VirtualMachineConfig.SCSIs["scsi0"])
	v, _ := srv.VM(100)
	assert.Equal(t, "pve2", v.Node)
	storages, err := c.NodeRef("pve2").Storages(ctx)
	require.NoError(t, err)
	require.Len(t, storages, 3)
	assert.EqualValues(t, 1, storages[2].Shared)
}
