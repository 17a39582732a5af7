package proxmox_test

import (
	"testing"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokenWithoutPowerMgmt: a token that may clone but not start
// VMs gets UNAUTHORIZED naming VM.PowerMgmt, and the clone it made is
// removed again.
func TestTokenWithoutPowerMgmt(t *testing.T) {
	srv := proxmoxtest.NewTestServer(t, proxmoxtest.WithLatencies(fastLatencies))
	sec, err := srv.AddToken("ops@pve!nopower", "VM.Audit", "Sys.Audit", "Datastore.Audit", "VM.Allocate", "VM.Clone",
		"VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
		"VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit", "VM.GuestAgent.Audit")
	require.NoError(t, err)
	p := newProvider(t, srv, func(c *proxmox.Config) {
		x := c.Contexts["sim"]
		x.TokenID, x.TokenSecret = "ops@pve!nopower", secretOf(sec)
		c.Contexts["sim"] = x
	})
	_, err = p.Apply(ctxT(t), vm("web-01", nil))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Unauthorized), "%v", err)
	assert.Contains(t, err.Error(), "VM.PowerMgmt")
	assert.Empty(t, guests(srv), "the half-made VM is removed")
}
