package proxmox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
)

// A stopped VM will not report what its guest agent gives (address, host
// key): a $ref waiting for one is told so at once; a running VM, or
// another field, lets the wait go on.
func TestWillReport(t *testing.T) {
	p := newEnv(t).p
	live := func(state string) *manifest.Resource {
		return &manifest.Resource{Kind: proxmox.KindVirtualMachine, Metadata: manifest.Metadata{Name: "web"}, Status: map[string]any{"state": state}}
	}
	err := p.WillReport(live("stopped"), "status.sshHostKey")
	require.ErrorIs(t, err, errcode.Invalid)
	assert.EqualError(t, err, "VirtualMachine web is stopped, so it will not report status.sshHostKey: start it (openctl proxmox start vm web), or set its spec.state: running (INVALID_REQUEST)")
	assert.NoError(t, p.WillReport(live("running"), "status.ip"))
	assert.NoError(t, p.WillReport(live("stopped"), "status.vmid"))
}
