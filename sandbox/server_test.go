package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/sandbox"
)

// A Server serves the simulator and says how to reach it and its hosts;
// its configuration file points both providers there, 0600.
func TestStartServer(t *testing.T) {
	srv, err := sandbox.StartServer(sandbox.ServerOptions{Listen: "127.0.0.1:0", Simulator: proxmoxtest.SandboxLayout(1, "")})
	require.NoError(t, err)
	defer srv.Close()
	info := srv.Info()
	assert.True(t, strings.HasPrefix(info.URL, "https://127.0.0.1:"), info.URL)
	assert.NotEmpty(t, info.TokenID)
	assert.NotEmpty(t, info.Fingerprint)
	assert.Equal(t, srv.World().Network().String(), info.K3s.AddressMap)
	assert.FileExists(t, info.K3s.IdentityFile)

	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, srv.WriteConfig(path))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, want := range []string{info.URL, info.Fingerprint, "addressMap: " + info.K3s.AddressMap, srv.World().K3sHosts().Dir} {
		assert.Contains(t, string(b), want)
	}

	_, err = sandbox.StartServer(sandbox.ServerOptions{Listen: "nonsense"})
	assert.ErrorIs(t, err, errcode.Invalid)
}
