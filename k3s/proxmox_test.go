package k3s_test

import (
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/secret"
)

// TestProxmoxCluster applies examples/k3s-proxmox.yaml — three servers
// and two workers on Proxmox VMs — against the Proxmox simulator, with
// five test hosts standing in for the VMs' guests: the simulated guests
// have the hosts' addresses (the example's static IPs, moved onto the
// test network) and report the hosts' SSH keys through the guest agent,
// so the K3s provider reaches each VM's k3s node by the address and host
// key read from the VM. Then a no-op re-apply and a delete: nodes first,
// then the VMs.
func TestProxmoxCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sim := &hostKeys{}
	srv := proxmoxtest.NewTestServer(t, append(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage),
		proxmoxtest.WithSpeed(4), proxmoxtest.WithGuestHostKeys(sim.lookup))...)
	id, sec := srv.Token()
	vms, err := proxmox.New(proxmox.Config{Contexts: map[string]proxmox.Context{"lab": {
		Endpoint: srv.URL(), TokenID: id, TokenSecret: secret.New(sec), Fingerprint: srv.Fingerprint(),
	}}})
	require.NoError(t, err)
	e := newEnv(t, vms)
	// One after another, so that their addresses follow each other as
	// the example's static IPs do.
	hosts := e.hosts(ctx, t, "vm1", "vm2", "vm3", "vm4", "vm5")
	sim.set(hosts)

	b, err := os.ReadFile("../examples/k3s-proxmox.yaml")
	require.NoError(t, err)
	rs, err := manifest.DecodeBytes(b, "k3s-proxmox.yaml")
	require.NoError(t, err)
	require.Len(t, rs, 1)
	c := rs[0]
	spec := c.Spec
	spec["network"] = map[string]any{"staticIPs": map[string]any{
		"startIP": hosts[0].Addr().String(), "gateway": e.net.Gateway().String(), "netmask": "255.255.255.0",
	}}
	delete(spec, "vip")
	spec["ssh"] = map[string]any{
		"user": k3stest.DefaultUser, "privateKeyPath": e.net.KeyFile(),
		"publicKeys": []any{strings.TrimSpace(string(ssh.MarshalAuthorizedKey(e.net.Signer().PublicKey())))},
	}
	spec["k3s"].(map[string]any)["version"] = standinVersion

	start := time.Now()
	rep, err := e.engine.Apply(ctx, c)
	if err != nil {
		dumpLogs(ctx, t, hosts...)
	}
	require.NoError(t, err)
	t.Logf("5 VMs and 3 servers + 2 agents Ready in %s", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 11, rep.Count(openctl.OutcomeCreated), "5 VMs, 5 nodes, the cluster")

	// Each control plane on its own Proxmox node; every VM tagged.
	onNode := map[string]string{}
	for vmid := 100; vmid < 120; vmid++ {
		v, ok := srv.VM(vmid)
		if !ok {
			continue
		}
		onNode[v.Config["name"]] = v.Node
		assert.Equal(t, "dev;k3s;openctl", v.Config["tags"], v.Config["name"])
	}
	require.Len(t, onNode, 5)
	assert.ElementsMatch(t, []string{"pve1", "pve2", "pve3"}, []string{onNode["dev-cp-0"], onNode["dev-cp-1"], onNode["dev-cp-2"]})

	f, err := e.engine.Get(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, f.Resource.Status["phase"])
	assert.Equal(t, "5/5", f.Resource.Status["readyNodes"])
	assert.Equal(t, "https://"+hosts[0].Addr().String()+":6443", f.Resource.Status["endpoint"])
	out, err := hosts[0].Run(ctx, "k3s", "kubectl", "get", "nodes", "-o", "wide", "--no-headers")
	require.NoError(t, err)
	for i, name := range []string{"dev-cp-0", "dev-cp-1", "dev-cp-2", "dev-worker-0", "dev-worker-1"} {
		assert.Regexp(t, `(?m)^`+name+` +Ready .* `+strings.ReplaceAll(hosts[i].Addr().String(), ".", `\.`)+` `, string(out))
	}

	start = time.Now()
	rep, err = e.engine.Apply(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, 11, rep.Count(openctl.OutcomeUnchanged), "a re-apply changes nothing")
	t.Logf("no-op re-apply in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	rep, err = e.engine.Delete(ctx, c.ID())
	require.NoError(t, err)
	assert.Equal(t, 11, rep.Count(openctl.OutcomeDeleted))
	t.Logf("deleted in %s", time.Since(start).Round(time.Millisecond))
	for vmid := 100; vmid < 120; vmid++ {
		_, ok := srv.VM(vmid)
		assert.False(t, ok, "VM %d deleted", vmid)
	}
	for _, h := range hosts {
		out, err := h.Run(ctx, "sh", "-c", "pgrep -a k3s || true")
		require.NoError(t, err)
		assert.NotContains(t, string(out), "k3s ", h.Name())
	}
}

// hostKeys gives a simulated guest the SSH host key of the test host
// with its address.
type hostKeys struct {
	mu    sync.Mutex
	hosts []*k3stest.Host
}

func (k *hostKeys) set(hosts []*k3stest.Host) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hosts = hosts
}

func (k *hostKeys) lookup(ip string) (ssh.PublicKey, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, h := range k.hosts {
		if h.Addr() == a {
			return h.HostKey(), true
		}
	}
	return nil, false
}
