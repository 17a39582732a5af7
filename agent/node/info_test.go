package node_test

import (
	"net/http"
	"testing"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerInfo(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.Facts{Hostname: "node-1", OS: "linux", Arch: "amd64", Kernel: "6.1.0-fake", Distro: "Fake Linux 1.0", Init: agent.Systemd}, info.Facts)
	assert.Equal(t, agenttest.DefaultVersion, info.K3sVersion)
	assert.Equal(t, agent.RoleServer, info.Role)
	assert.Equal(t, agent.StateActive, info.ServiceState)
	assert.Equal(t, agenttest.AgentVersion, info.AgentVersion)
	for _, c := range []string{agent.CapInfo, agent.CapLogs, agent.CapFollow, agent.CapService, agent.CapUpgrade, agent.CapRollback} {
		assert.True(t, info.Has(c), c)
	}
	assert.False(t, info.Has("exec"))
	assert.Empty(t, info.Problems)

	// The wire format is flat.
	_, _, body := call(t, env, http.MethodGet, "/v1/info", "")
	for _, k := range []string{`"hostname":"node-1"`, `"init":"systemd"`, `"k3sVersion":`, `"role":"server"`, `"serviceState":"active"`, `"agentVersion":`, `"capabilities":[`} {
		assert.Contains(t, string(body), k)
	}
}

func TestServerInfoPartial(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	require.NoError(t, removeFile(env.System.K3sBinary()))
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err, "a broken k3s does not make /v1/info fail")
	assert.Empty(t, info.K3sVersion)
	require.Len(t, info.Problems, 1)
	assert.Contains(t, info.Problems[0], "k3s version")

	env.System.SetRole(agent.RoleNone)
	info, err = env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.RoleNone, info.Role)
	assert.Equal(t, agent.StateUnknown, info.ServiceState)
	assert.Empty(t, info.Problems)
}
