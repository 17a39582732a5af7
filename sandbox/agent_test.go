package sandbox

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent/node"
	"github.com/openctl/openctl/sandbox/k3slite"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// The agent's HostSystem names the k3s binary under its root (the host's
// directory); run through hostRunner it is the host's /usr/local/bin/k3s,
// whose version the agent reads (the health gate of an upgrade, /v1/info).
func TestAgentReadsTheHostsK3sVersion(t *testing.T) {
	ctx := context.Background()
	n := k3slite.NewNetwork(k3slite.NetworkOptions{})
	t.Cleanup(func() { _ = n.Close() })
	h, err := vmhost.New(t.TempDir(), vmhost.Options{Init: vmhost.InitSystemd, Programs: map[string]vmhost.Program{k3slite.ProgramPath: n.Program()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	st, err := h.Run(ctx, "mkdir -p /usr/local/bin && cat > /usr/local/bin/k3s && chmod 755 /usr/local/bin/k3s", bytes.NewReader(k3slite.BinaryReporting("v1.37.4+k3s1", "v1.37.9+k3s1")), nil, nil, nil, "root")
	require.NoError(t, err)
	require.Zero(t, st)

	sys, err := node.NewHostSystem(node.HostOptions{Root: h.Dir(), Runner: hostRunner{h}})
	require.NoError(t, err)
	v, err := sys.K3sVersion(ctx, sys.K3sBinary())
	require.NoError(t, err)
	assert.Equal(t, "v1.37.9+k3s1", v, "what the binary reports")

	// A program named by its host path runs as it is; one under the
	// directory that is not the host's is not found there.
	_, err = hostRunner{h}.Run(ctx, "/usr/local/bin/k3s", "--version")
	require.NoError(t, err)
	_, err = hostRunner{h}.Run(ctx, h.Dir()+"-other/usr/local/bin/k3s", "--version")
	require.Error(t, err)
}
