package proxmox

import (
	"context"
	"testing"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/secret"
)

// assertNormalized checks that a resource's status holds only the value
// types manifest.Normalize produces.
func assertNormalized(t *testing.T, r *manifest.Resource) {
	t.Helper()
	norm, err := manifest.NormalizeMap(r.Status)
	require.NoError(t, err)
	assert.Equal(t, norm, r.Status)
}

func TestListNodes(t *testing.T) {
	t.Parallel()
	srv := fastSim(t, proxmoxtest.WithNodes(3), proxmoxtest.WithSharedStorage("ceph"))
	cn := dialT(t, "lab", simContext(srv), nil)

	nodes, err := cn.listNodes(context.Background())
	require.NoError(t, err)
	require.Len(t, nodes, 3)
	for i, want := range []string{"pve1", "pve2", "pve3"} {
		n := nodes[i]
		assert.Equal(t, want, n.Metadata.Name)
		assert.Equal(t, APIVersion, n.APIVersion)
		assert.Equal(t, KindNode, n.Kind)
		assert.Equal(t, "lab", n.Metadata.Labels[LabelContext])
		assertNormalized(t, n)
	}
	st := nodes[1].Status
	assert.Equal(t, "online", st["status"])
	assert.Equal(t, int64(16), st["cpus"])
	assert.InDelta(t, 0.03, st["cpu"], 1e-9)
	assert.Equal(t, map[string]any{"total": int64(64 << 30), "used": int64(8 << 30), "free": int64(56 << 30)}, st["memory"])
	assert.Greater(t, st["uptime"], int64(0))
	assert.Equal(t, []any{"vmbr0"}, st["bridges"])
	storages := st["storages"].([]any)
	require.Len(t, storages, 3)
	assert.Equal(t, map[string]any{
		"name": "ceph", "type": "rbd", "shared": true, "total": int64(1 << 40), "used": int64(1<<40) / 10,
		"available": int64(1<<40) - int64(1<<40)/10, "content": []any{"images", "rootdir"},
	}, storages[0])
	assert.Equal(t, "local", storages[1].(map[string]any)["name"])
	assert.Equal(t, "dir", storages[1].(map[string]any)["type"])
	assert.Equal(t, false, storages[2].(map[string]any)["shared"])

	// One cluster-wide read plus one network read per node.
	assert.Equal(t, 1, srv.RequestCount("GET /cluster/resources"))
	assert.Equal(t, 3, srv.RequestCount("GET /nodes/{node}/network"))
}

func TestGetNode(t *testing.T) {
	t.Parallel()
	srv := fastSim(t, proxmoxtest.WithNodes(3))
	cn := dialT(t, "lab", simContext(srv), nil)
	ctx := context.Background()

	n, err := cn.getNode(ctx, "pve2")
	require.NoError(t, err)
	assert.Equal(t, "pve2", n.Metadata.Name)
	assert.Equal(t, "online", n.Status["status"])
	assert.Len(t, n.Status["storages"], 2)
	assert.Equal(t, 2, srv.RequestCount("GET /cluster/resources")+srv.RequestCount("GET /nodes/{node}/network"))

	_, err = cn.getNode(ctx, "pve9")
	require.Error(t, err)
	assert.Equal(t, errcode.NotFound, errcode.Of(err))
	assert.Contains(t, err.Error(), `no node "pve9" (nodes: pve1, pve2, pve3)`)
}

// templateSim has templates "ubuntu" on pve1 and pve3 (local storage),
// "debian" on pve2 (shared storage ceph, no agent) and an unnamed one on
// pve1.
func templateSim(t *testing.T) (*proxmoxtest.Server, *conn) {
	t.Helper()
	srv := fastSim(t, proxmoxtest.WithNodes(3), proxmoxtest.WithSharedStorage("ceph"),
		proxmoxtest.WithTemplates(
			proxmoxtest.Template{VMID: 9000, Name: "ubuntu", Node: "pve1", Agent: true},
			proxmoxtest.Template{VMID: 9001, Name: "debian", Node: "pve2", Storage: "ceph", DiskSize: "20G"},
			proxmoxtest.Template{VMID: 9002, Name: "ubuntu", Node: "pve3", Agent: true},
			proxmoxtest.Template{VMID: 9003, Node: "pve1"},
		))
	return srv, dialT(t, "lab", simContext(srv), nil)
}

func TestListTemplates(t *testing.T) {
	t.Parallel()
	srv, cn := templateSim(t)
	ts, err := cn.listTemplates(context.Background())
	require.NoError(t, err)
	var got [][2]string
	for _, r := range ts {
		got = append(got, [2]string{r.Metadata.Name, r.Metadata.Labels[LabelNode]})
		assert.Equal(t, KindTemplate, r.Kind)
		assert.Equal(t, APIVersion, r.APIVersion)
		assertNormalized(t, r)
	}
	assert.Equal(t, [][2]string{{"9003", "pve1"}, {"debian", "pve2"}, {"ubuntu", "pve1"}, {"ubuntu", "pve3"}}, got)

	assert.Equal(t, map[string]any{
		"vmid": int64(9001), "node": "pve2", "disks": map[string]any{"scsi0": "20G"}, "storage": "ceph",
		"agent": false, "cloudInit": true, "shared": true,
	}, ts[1].Status)
	assert.Equal(t, map[string]any{
		"vmid": int64(9000), "node": "pve1", "disks": map[string]any{"scsi0": "10G"}, "storage": "local-lvm",
		"agent": true, "cloudInit": true, "shared": false,
	}, ts[2].Status)

	assert.Equal(t, 1, srv.RequestCount("GET /cluster/resources"))
	assert.Equal(t, 4, srv.RequestCount("GET /nodes/{node}/qemu/{vmid}/config"))
}

func TestGetTemplate(t *testing.T) {
	t.Parallel()
	srv, cn := templateSim(t)
	ctx := context.Background()

	r, err := cn.getTemplate(ctx, "debian")
	require.NoError(t, err)
	assert.Equal(t, "debian", r.Metadata.Name)
	assert.Equal(t, int64(9001), r.Status["vmid"])
	assert.Equal(t, "pve2", r.Metadata.Labels[LabelNode])
	assert.Equal(t, 1, srv.RequestCount("GET /cluster/resources"))
	assert.Equal(t, 1, srv.RequestCount("GET /nodes/{node}/qemu/{vmid}/config"))

	r, err = cn.getTemplate(ctx, "9003")
	require.NoError(t, err, "an unnamed template is found by its VMID")
	assert.Equal(t, "pve1", r.Status["node"])

	_, err = cn.getTemplate(ctx, "ubuntu")
	require.Error(t, err)
	assert.Equal(t, errcode.Invalid, errcode.Of(err))
	assert.Contains(t, err.Error(), `template name "ubuntu" is ambiguous: VMID 9000 on node pve1, VMID 9002 on node pve3`)

	_, err = cn.getTemplate(ctx, "arch")
	require.Error(t, err)
	assert.Equal(t, errcode.NotFound, errcode.Of(err))
	assert.Contains(t, err.Error(), `no template "arch" (templates: 9003, debian, ubuntu;`)
}

func TestTemplatesHiddenWithoutAudit(t *testing.T) {
	t.Parallel()
	srv := fastSim(t)
	sec, err := srv.AddToken("ci@pve!blind", "Sys.Audit")
	require.NoError(t, err)
	c := simContext(srv)
	c.TokenID, c.TokenSecret = "ci@pve!blind", secret.New(sec)
	cn := dialT(t, "lab", c, nil)
	ts, err := cn.listTemplates(context.Background())
	require.NoError(t, err)
	assert.Empty(t, ts)
	_, err = cn.getTemplate(context.Background(), "ubuntu-24.04-cloud")
	assert.Equal(t, errcode.NotFound, errcode.Of(err))
	assert.Contains(t, err.Error(), "VM.Audit")
}

func TestFindTemplate(t *testing.T) {
	t.Parallel()
	srv, cn := templateSim(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name       string
		node, tmpl string
		vmid       int
		want       templateRef
	}{
		{"on the wanted node", "pve1", "ubuntu", 0, templateRef{Node: "pve1", VMID: 9000, Name: "ubuntu", Template: true}},
		{"the copy on the wanted node", "pve3", "ubuntu", 0, templateRef{Node: "pve3", VMID: 9002, Name: "ubuntu", Template: true}},
		{"shared storage crosses nodes", "pve1", "debian", 0, templateRef{Node: "pve2", VMID: 9001, Name: "debian", Shared: true, Template: true}},
		{"shared storage, any node", "", "debian", 0, templateRef{Node: "pve2", VMID: 9001, Name: "debian", Shared: true, Template: true}},
		{"by vmid anywhere", "", "", 9002, templateRef{Node: "pve3", VMID: 9002, Name: "ubuntu", Template: true}},
		{"by vmid and name", "pve1", "ubuntu", 9000, templateRef{Node: "pve1", VMID: 9000, Name: "ubuntu", Template: true}},
		{"by vmid, shared, other node", "pve3", "", 9001, templateRef{Node: "pve2", VMID: 9001, Name: "debian", Shared: true, Template: true}},
	} {
		got, err := cn.findTemplate(ctx, tc.node, tc.tmpl, tc.vmid)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}

	before := srv.RequestCount("GET /cluster/resources") + srv.RequestCount("GET /nodes/{node}/qemu/{vmid}/config")
	_, err := cn.findTemplate(ctx, "pve1", "ubuntu", 0)
	require.NoError(t, err)
	after := srv.RequestCount("GET /cluster/resources") + srv.RequestCount("GET /nodes/{node}/qemu/{vmid}/config")
	assert.Equal(t, 2, after-before, "one cluster read and one config read")

	for _, tc := range []struct {
		name       string
		node, tmpl string
		vmid       int
		code       errcode.Code
		subs       []string
	}{
		{"local template on another node", "pve2", "", 9000, errcode.Invalid,
			[]string{`template "ubuntu" (VMID 9000) is on node pve1`, "shared with pve2", "scsi0 on local-lvm", "ide2 on local-lvm", "place the VM on pve1"}},
		{"no copy usable on the node", "pve2", "ubuntu", 0, errcode.Invalid,
			[]string{`template "ubuntu" is not on node pve2`, "VMID 9000 on node pve1, VMID 9002 on node pve3", "shared storage"}},
		{"ambiguous without a node", "", "ubuntu", 0, errcode.Invalid, []string{`template "ubuntu" is ambiguous`, "VMID 9000", "VMID 9002"}},
		{"unknown name", "pve1", "arch", 0, errcode.NotFound, []string{`no template "arch"`}},
		{"unknown vmid", "pve1", "", 4242, errcode.NotFound, []string{"no VM 4242"}},
		{"vmid and another name", "pve1", "debian", 9000, errcode.Invalid, []string{`VM 9000 is named "ubuntu", not "debian"`}},
		{"unknown node", "pve7", "ubuntu", 0, errcode.Invalid, []string{`no node "pve7"`}},
		{"nothing named", "pve1", "", 0, errcode.Invalid, []string{"set name or vmid"}},
	} {
		_, err := cn.findTemplate(ctx, tc.node, tc.tmpl, tc.vmid)
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.code, errcode.Of(err), "%s: %v", tc.name, err)
		for _, s := range tc.subs {
			assert.Contains(t, err.Error(), s, tc.name)
		}
	}
}

// TestFindTemplateAgreesWithProxmox clones what findTemplate accepts and
// checks that Proxmox (the simulator) refuses what it refuses.
func TestFindTemplateAgreesWithProxmox(t *testing.T) {
	t.Parallel()
	_, cn := templateSim(t)
	ctx := context.Background()
	clone := func(ref templateRef, target string) (int, error) {
		vm := cn.client.NodeRef(ref.Node).VirtualMachineRef(ref.VMID)
		id, task, err := vm.Clone(ctx, &pve.VirtualMachineCloneOptions{Name: "c" + target, Target: target, Full: true})
		if err != nil {
			return 0, err
		}
		return id, task.Wait(ctx, 10*time.Millisecond, 10*time.Second)
	}

	ref, err := cn.findTemplate(ctx, "pve3", "debian", 0)
	require.NoError(t, err)
	newID, err := clone(ref, "pve3")
	require.NoError(t, err, "a template on shared storage clones across nodes")

	_, err = cn.findTemplate(ctx, "pve2", "", 9000)
	require.Error(t, err)
	_, err = clone(templateRef{Node: "pve1", VMID: 9000}, "pve2")
	require.Error(t, err, "Proxmox refuses a cross-node clone from local storage too")
	assert.Contains(t, err.Error(), "local storage")

	// An ordinary VM can be named by VMID; it is not a template.
	ref, err = cn.findTemplate(ctx, "pve3", "", newID)
	require.NoError(t, err)
	assert.Equal(t, templateRef{Node: "pve3", VMID: newID, Name: "cpve3", Shared: true, Template: false}, ref)
	// ... but not by name.
	_, err = cn.findTemplate(ctx, "pve3", "cpve3", 0)
	assert.Equal(t, errcode.NotFound, errcode.Of(err))
}

func TestBootDisk(t *testing.T) {
	t.Parallel()
	disks := map[string]string{"scsi0": "a", "virtio1": "b", "sata0": "c"}
	assert.Equal(t, "virtio1", bootDisk(vmConfig{"boot": "order=ide2;virtio1;scsi0"}, disks))
	assert.Equal(t, "scsi0", bootDisk(vmConfig{}, disks))
	assert.Equal(t, "sata0", bootDisk(vmConfig{"boot": "order=net0"}, map[string]string{"sata0": "c", "ide0": "d"}))
	assert.Equal(t, "", bootDisk(vmConfig{}, nil))
}

func TestVolumes(t *testing.T) {
	t.Parallel()
	cf := vmConfig{
		"scsi0":   "ceph:base-9000-disk-0,discard=on,size=10G",
		"ide2":    "local-lvm:vm-9000-cloudinit,media=cdrom",
		"ide0":    "local:iso/ubuntu.iso,media=cdrom,size=2G",
		"ide1":    "none,media=cdrom",
		"sata0":   "/dev/sdb,size=100G",
		"unused0": "local-lvm:vm-9000-disk-9",
		"net0":    "virtio=BC:24:11:00:00:01,bridge=vmbr0",
	}
	vols := cf.volumes()
	var keys []string
	for _, v := range vols {
		keys = append(keys, v.key+"="+v.storage)
	}
	assert.Equal(t, []string{"ide0=local", "ide1=", "ide2=local-lvm", "sata0=", "scsi0=ceph"}, keys)
	assert.True(t, vols[2].cloudInit)
	assert.True(t, vols[0].cdrom)
}
