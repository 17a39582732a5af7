package proxmox_test

import (
	"net/http"
	"testing"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAsReachesTheClient: New works without a registry, and As
// reaches the default context's *proxmox.Client, which is usable.
func TestAsReachesTheClient(t *testing.T) {
	e := newEnv(t)
	var c *pve.Client
	require.True(t, e.p.As(&c))
	require.NotNil(t, c)
	v, err := c.Version(ctxT(t))
	require.NoError(t, err)
	assert.NotEmpty(t, v.Version)
	var other *http.Client
	assert.False(t, e.p.As(&other))
	assert.False(t, e.p.As(c), "a *Client (not a **Client) is not a target")
}
