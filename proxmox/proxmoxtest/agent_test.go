package proxmoxtest_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// TestGuestHostKeys: a guest whose address WithGuestHostKeys knows serves
// that key through agent/file-read; any other keeps its own.
func TestGuestHostKeys(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	hostKey, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	var asked []string
	srv, c := newSim(t, proxmoxtest.WithGuestHostKeys(func(ip string) (ssh.PublicKey, bool) {
		asked = append(asked, ip)
		return hostKey, ip == "10.9.0.5"
	}))
	ctx := simCtx(t)

	read := func(vmid int, ipconfig string) ssh.PublicKey {
		vm := cloneAndWait(t, ctx, c, vmid, "guest")
		task, err := vm.Config(ctx, proxmox.VirtualMachineOption{Name: "ipconfig0", Value: ipconfig})
		require.NoError(t, err)
		require.NoError(t, waitTask(t, ctx, task))
		task, err = vm.Start(ctx)
		require.NoError(t, err)
		require.NoError(t, waitTask(t, ctx, task))
		require.NoError(t, vm.WaitForAgent(ctx, 10))
		f, err := vm.AgentFileRead(ctx, proxmoxtest.HostKeyPath)
		require.NoError(t, err)
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f.Content))
		require.NoError(t, err)
		return key
	}
	assert.Equal(t, ssh.FingerprintSHA256(hostKey), ssh.FingerprintSHA256(read(101, "ip=10.9.0.5/24,gw=10.9.0.1")))
	got := read(102, "ip=dhcp")
	own, ok := srv.HostKey(102)
	require.True(t, ok)
	assert.Equal(t, ssh.FingerprintSHA256(own), ssh.FingerprintSHA256(got))
	// The static address first, then the other guest's DHCP lease.
	require.Len(t, asked, 2)
	assert.Equal(t, "10.9.0.5", asked[0])
	assert.Regexp(t, `^10\.10\.0\.[0-9]+$`, asked[1])
}

// recordGuests records what the simulator tells its Guests and reports
// its own host key for every guest.
type recordGuests struct {
	mu      sync.Mutex
	events  []string
	started []proxmoxtest.Guest
	key     ssh.PublicKey
}

func (g *recordGuests) Start(guest proxmoxtest.Guest) (proxmoxtest.GuestReport, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, fmt.Sprint("start ", guest.VMID))
	g.started = append(g.started, guest)
	if guest.Name == "broken" {
		return proxmoxtest.GuestReport{}, errors.New("guest failed to boot")
	}
	return proxmoxtest.GuestReport{HostKey: g.key}, nil
}

func (g *recordGuests) Stop(vmid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, fmt.Sprint("stop ", vmid))
}

func (g *recordGuests) Destroy(vmid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, fmt.Sprint("destroy ", vmid))
}

// TestGuests: WithGuests is told of every boot (with the cloud-init
// address, user and keys), stop, reboot and destroy; the guest agent
// reports the cloud-init address on the first interface, as a real
// guest does, and the host key the guest's Start returned; a guest
// that fails to boot fails the start task.
func TestGuests(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	hostKey, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	g := &recordGuests{key: hostKey}
	_, c := newSim(t, proxmoxtest.WithGuests(g))
	ctx := simCtx(t)

	vm := cloneAndWait(t, ctx, c, 101, "guest")
	for _, o := range []proxmox.VirtualMachineOption{
		{Name: "ipconfig0", Value: "ip=192.168.1.50/24,gw=192.168.1.1"},
		{Name: "ciuser", Value: "ubuntu"},
		{Name: "sshkeys", Value: url.PathEscape("ssh-ed25519 AAAA one\nssh-ed25519 BBBB two\n")},
	} {
		task, err := vm.Config(ctx, o)
		require.NoError(t, err)
		require.NoError(t, waitTask(t, ctx, task))
	}
	task, err := vm.Start(ctx)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))
	require.NoError(t, vm.WaitForAgent(ctx, 10))
	ifaces, err := vm.AgentGetNetworkIFaces(ctx)
	require.NoError(t, err)
	var ips []string
	for _, i := range ifaces {
		for _, a := range i.IPAddresses {
			if a.IPAddressType == "ipv4" {
				ips = append(ips, fmt.Sprintf("%s/%d", a.IPAddress, a.Prefix))
			}
		}
	}
	assert.Contains(t, ips, "192.168.1.50/24", "the cloud-init address, as a real guest reports it")
	f, err := vm.AgentFileRead(ctx, proxmoxtest.HostKeyPath)
	require.NoError(t, err)
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f.Content))
	require.NoError(t, err)
	assert.Equal(t, ssh.FingerprintSHA256(hostKey), ssh.FingerprintSHA256(key))

	for _, op := range []func(context.Context) (*proxmox.Task, error){vm.Reboot, vm.Stop} {
		task, err := op(ctx)
		require.NoError(t, err)
		require.NoError(t, waitTask(t, ctx, task))
	}
	task, err = vm.Delete(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, waitTask(t, ctx, task))

	broken := cloneAndWait(t, ctx, c, 102, "broken")
	task, err = broken.Start(ctx)
	require.NoError(t, err)
	assert.ErrorContains(t, waitTask(t, ctx, task), "guest failed to boot")

	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, []string{"start 101", "stop 101", "start 101", "stop 101", "destroy 101", "start 102"}, g.events)
	want := proxmoxtest.Guest{VMID: 101, Node: "pve1", Name: "guest", IPv4: "192.168.1.50", Prefix: 24, User: "ubuntu", SSHKeys: []string{"ssh-ed25519 AAAA one", "ssh-ed25519 BBBB two"}}
	assert.Equal(t, want, g.started[0])
}
