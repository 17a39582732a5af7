package proxmoxtest_test

import (
	"crypto/ed25519"
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
