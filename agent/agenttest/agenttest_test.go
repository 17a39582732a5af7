package agenttest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
)

func TestSystemStateMachine(t *testing.T) {
	ctx := t.Context()
	s := agenttest.NewSystem(t)
	assert.Equal(t, agenttest.DefaultVersion, s.InstalledVersion())
	v, err := s.K3sVersion(ctx, s.K3sBinary())
	require.NoError(t, err)
	assert.Equal(t, agenttest.DefaultVersion, v)

	require.NoError(t, s.Service(ctx, agent.Stop))
	st, _ := s.ServiceState(ctx)
	assert.Equal(t, agent.StateInactive, st)
	require.NoError(t, s.Service(ctx, agent.Start))
	st, _ = s.ServiceState(ctx)
	assert.Equal(t, agent.StateActive, st)

	s.Break("v9.9.9+k3s1")
	require.NoError(t, s.Install("v9.9.9+k3s1"))
	require.NoError(t, s.Service(ctx, agent.Restart))
	st, _ = s.ServiceState(ctx)
	assert.Equal(t, agent.StateFailed, st)
	assert.Equal(t, []agent.ServiceAction{agent.Stop, agent.Start, agent.Restart}, s.Actions())

	s.FailService(errors.New("boom"))
	assert.EqualError(t, s.Service(ctx, agent.Start), "boom")
	assert.Error(t, s.Service(ctx, "reload"), "unknown actions fail")

	s.SetLogs([]string{"a", "b", "c"})
	var sb strings.Builder
	require.NoError(t, s.Logs(ctx, 2, &sb))
	assert.Equal(t, "b\nc\n", sb.String())

	_, err = s.K3sVersion(ctx, "/nonexistent")
	assert.Error(t, err)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Facts(canceled)
	assert.ErrorIs(t, err, context.Canceled)
}

// The fake binary is a script whose output has the real --version shape.
func TestFakeBinaryRuns(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	s := agenttest.NewSystem(t)
	out, err := exec.CommandContext(t.Context(), s.K3sBinary(), "--version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "k3s version "+agenttest.DefaultVersion+" "), "%s", out)
	fi, err := os.Stat(s.K3sBinary())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
}

func TestReleaseServer(t *testing.T) {
	rel := agenttest.NewReleaseServer(t)
	rel.Publish("v1.2.3+k3s1")
	get := func(path string) (int, string) {
		resp, err := http.Get(rel.URL() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1.2.3+k3s1/k3s-arm64")
	assert.Equal(t, 200, code)
	assert.Equal(t, string(agenttest.FakeBinary("v1.2.3+k3s1")), body)
	code, body = get("/v1.2.3+k3s1/sha256sum-arm.txt")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "  k3s-armhf\n")
	code, _ = get("/v9.9.9+k3s1/k3s")
	assert.Equal(t, 404, code)
	assert.Equal(t, []string{"/v1.2.3+k3s1/k3s-arm64", "/v1.2.3+k3s1/sha256sum-arm.txt", "/v9.9.9+k3s1/k3s"}, rel.Requests())
}

func TestStart(t *testing.T) {
	env := agenttest.Start(t, agenttest.Options{})
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.RoleServer, info.Role)
	env.System.SetState(agent.StateFailed)
	info, err = env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.StateFailed, info.ServiceState)
}

func ExampleFakeBinary() {
	fmt.Print(string(agenttest.FakeBinary("v1.31.2+k3s1")))
	// Output:
	// #!/bin/sh
	// echo 'k3s version v1.31.2+k3s1 (fake)'
	// echo 'go version go1.22.0'
}
