package proxmoxtest_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

var upidRe = regexp.MustCompile(`^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmclone:9000:root@pam!openctl:$`)

// TestLifecycle: nextid → clone → config with cloud-init → start → wait for
// the agent's IP → stop → delete, all through go-proxmox.
func TestLifecycle(t *testing.T) {
	srv, c := newSim(t)
	ctx := simCtx(t)

	cluster, err := c.Cluster(ctx)
	require.NoError(t, err)
	assert.Len(t, cluster.Nodes, 1)
	newid, err := cluster.NextID(ctx)
	require.NoError(t, err)
	require.Equal(t, 100, newid)

	tmpl := tmplVM(t, ctx, c)
	require.True(t, bool(tmpl.Template))
	_, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: newid, Name: "web1"})
	require.NoError(t, err)
	// BEHAVIOUR.md "Tasks": UPID with trailing colon, qmclone's id is the source.
	require.Regexp(t, upidRe, string(task.UPID))

	// The target exists at once, holding only the clone lock, and is listed.
	v, ok := srv.VM(newid)
	require.True(t, ok)
	assert.Equal(t, "clone", v.Lock)
	assert.Equal(t, map[string]string{"lock": "clone"}, v.Config)
	vms, err := c.NodeRef("pve1").VirtualMachines(ctx)
	require.NoError(t, err)
	require.Len(t, vms, 2)
	assert.Equal(t, "clone", vms[0].Lock)

	require.NoError(t, waitTask(t, ctx, task))
	vm, err := c.NodeRef("pve1").VirtualMachine(ctx, newid)
	require.NoError(t, err)
	assert.Equal(t, "web1", vm.Name)
	assert.False(t, bool(vm.Template))
	assert.Empty(t, vm.Lock)
	// A template is cloned linked by default (BEHAVIOUR.md "VMIDs and cloning").
	assert.Equal(t, "local-lvm:base-9000-disk-0/vm-100-disk-0,discard=on,size=10G", vm.VirtualMachineConfig.SCSIs["scsi0"])
	assert.NotEqual(t, tmpl.VirtualMachineConfig.Nets["net0"], vm.VirtualMachineConfig.Nets["net0"], "a clone gets a new MAC")

	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMl4B4B2cKbq+6YJ8z+0KCdZq1z7S4Y7p0hfD0tS8ZkD test"))
	require.NoError(t, err)
	cfgTask, err := vm.Config(ctx,
		proxmox.VirtualMachineOption{Name: "ciuser", Value: "ubuntu"},
		proxmox.VirtualMachineOption{Name: "sshkeys", Value: proxmox.EncodeSSHKeys(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))},
		proxmox.VirtualMachineOption{Name: "ipconfig0", Value: "ip=dhcp"},
		proxmox.VirtualMachineOption{Name: "cores", Value: 4},
		proxmox.VirtualMachineOption{Name: "memory", Value: "4096"},
	)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, cfgTask))
	require.NoError(t, vm.Ping(ctx))
	assert.Equal(t, "ubuntu", vm.VirtualMachineConfig.CIUser)
	assert.Equal(t, 4, *vm.VirtualMachineConfig.Cores)
	assert.EqualValues(t, 4096, vm.VirtualMachineConfig.Memory)

	startTask, err := vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, startTask))
	require.NoError(t, vm.Ping(ctx))
	assert.Equal(t, "running", vm.Status)

	// The agent comes up after a delay; go-proxmox's WaitForAgent retries
	// on "QEMU guest agent is not running".
	require.NoError(t, vm.WaitForAgent(ctx, 10))
	var ip string
	require.Eventually(t, func() bool {
		ifaces, err := vm.AgentGetNetworkIFaces(ctx)
		if err != nil {
			return false
		}
		for _, iface := range ifaces {
			for _, a := range iface.IPAddresses {
				if a.IPAddressType == "ipv4" {
					ip = a.IPAddress
					return true
				}
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, "10.10.0.100", ip)

	// The host key is the VM's own, learnt through the agent.
	f, err := vm.AgentFileRead(ctx, proxmoxtest.HostKeyPath)
	require.NoError(t, err)
	got, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f.Content))
	require.NoError(t, err)
	want, ok := srv.HostKey(newid)
	require.True(t, ok)
	assert.Equal(t, ssh.FingerprintSHA256(want), ssh.FingerprintSHA256(got))
	tmplKey, _ := srv.HostKey(9000)
	assert.NotEqual(t, ssh.FingerprintSHA256(tmplKey), ssh.FingerprintSHA256(got))

	stopTask, err := vm.Stop(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, stopTask))
	delTask, err := vm.Delete(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, delTask))
	_, ok = srv.VM(newid)
	assert.False(t, ok)
	_, err = c.NodeRef("pve1").VirtualMachine(ctx, newid)
	assert.True(t, proxmox.IsNotFound(err), "%v", err)
	newid, err = cluster.NextID(ctx)
	require.NoError(t, err)
	assert.Equal(t, 100, newid)

	// The node task list has every task, newest first, with exit statuses.
	tasks, err := c.NodeRef("pve1").Tasks(ctx, &proxmox.NodeTasksOptions{Source: "all"})
	require.NoError(t, err)
	var types []string
	for _, task := range tasks {
		types = append(types, task.Type+":"+task.Status)
	}
	assert.Equal(t, []string{"qmdestroy:OK", "qmstop:OK", "qmstart:OK", "qmconfig:OK", "qmclone:OK"}, types)
	assert.Positive(t, srv.RequestCount("POST /nodes/{node}/qemu/{vmid}/clone"))
}

func TestTaskLog(t *testing.T) {
	_, c := newSim(t)
	ctx := simCtx(t)
	task, err := tmplVM(t, ctx, c).Start(ctx)
	require.NoError(t, err)
	requireTaskFailed(t, waitTask(t, ctx, task), "you can't start a vm if it's a template")
	log, err := task.Log(ctx, 0, 50)
	require.NoError(t, err)
	require.NotEmpty(t, log)
	assert.Equal(t, "TASK ERROR: you can't start a vm if it's a template", log[len(log)-1])

	vm := cloneAndWait(t, ctx, c, 100, "a")
	task, err = vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	log, err = task.Log(ctx, 0, 50)
	require.NoError(t, err)
	assert.Equal(t, "TASK OK", log[len(log)-1])
}

// TestReasonPhrase reads the raw status line: the message is the reason
// phrase (BEHAVIOUR.md "Wire format").
func TestReasonPhrase(t *testing.T) {
	srv, _ := newSim(t)
	req, err := http.NewRequest(http.MethodGet, srv.URL()+"/nodes/pve1/qemu/4242/config", nil)
	require.NoError(t, err)
	id, secret := srv.Token()
	req.Header.Set("Authorization", "PVEAPIToken="+id+"="+secret)
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "500 Configuration file 'nodes/pve1/qemu-server/4242.conf' does not exist", res.Status)
}

func TestFingerprint(t *testing.T) {
	srv, c := newSim(t)
	assert.Regexp(t, `^([0-9A-F]{2}:){31}[0-9A-F]{2}$`, srv.Fingerprint())
	assert.Regexp(t, `^https://127\.0\.0\.1:\d+/api2/json$`, srv.URL())
	v, err := c.Version(simCtx(t))
	require.NoError(t, err)
	assert.Equal(t, "9.0", v.Release)
}

func TestRoutes(t *testing.T) {
	srv, _ := newSim(t)
	for _, r := range srv.Routes() {
		t.Log(r)
	}
	assert.Contains(t, srv.Routes(), "POST /nodes/{node}/qemu/{vmid}/clone")
}
