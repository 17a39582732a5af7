package node_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerService(t *testing.T) {
	ctx := t.Context()
	env := agenttest.Start(t, agenttest.Options{})
	require.NoError(t, env.Client.Stop(ctx))
	info, err := env.Client.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StateInactive, info.ServiceState)
	require.NoError(t, env.Client.Start(ctx))
	require.NoError(t, env.Client.Restart(ctx))
	assert.Equal(t, []agent.ServiceAction{agent.Stop, agent.Start, agent.Restart}, env.System.Actions())

	_, _, body := call(t, env, http.MethodPost, "/v1/service/k3s/restart", "")
	assert.JSONEq(t, `{"action":"restart","serviceState":"active"}`, string(body))

	env.System.FailService(errors.New("systemctl: job failed"))
	err = env.Client.Restart(ctx)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Internal), "%v", err)
	assert.Contains(t, err.Error(), "systemctl: job failed")

	env.System.SetRole(agent.RoleNone)
	assert.True(t, errcode.Is(env.Client.Restart(ctx), errcode.NotFound))
	assert.True(t, errcode.Is(env.Client.Service(ctx, "reload"), errcode.Invalid), "checked by the client")
}
