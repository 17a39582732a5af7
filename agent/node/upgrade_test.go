package node_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/agent/agenttest"
	"github.com/openctl/openctl/errcode"
)

const newVersion = "v1.31.2+k3s1"

// upgradeEnv starts an agent and a release server publishing newVersion.
func upgradeEnv(t *testing.T, opts agenttest.Options) (*agenttest.Env, *agenttest.ReleaseServer) {
	t.Helper()
	rel := agenttest.NewReleaseServer(t)
	rel.Publish(newVersion)
	opts.ReleaseURL = rel.URL()
	return agenttest.Start(t, opts), rel
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return data
}

// binDir lists the directory of the k3s binary.
func binDir(t *testing.T, env *agenttest.Env) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(env.System.K3sBinary()))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestUpgradeSuccess(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	bin := env.System.K3sBinary()
	old := readFile(t, bin)

	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.NoError(t, err)
	assert.Equal(t, &agent.UpgradeResult{Status: agent.UpgradeUpgraded, From: agenttest.DefaultVersion, To: newVersion, ServiceState: agent.StateActive}, res)

	assert.Equal(t, newVersion, env.System.InstalledVersion())
	assert.Equal(t, agenttest.FakeBinary(newVersion), readFile(t, bin))
	assert.Equal(t, old, readFile(t, bin+".previous"), "the previous binary is kept")
	fi, err := os.Stat(bin)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	assert.ElementsMatch(t, []string{"k3s", "k3s.previous"}, binDir(t, env), "no temporary file left")
	assert.Equal(t, []agent.ServiceAction{agent.Restart}, env.System.Actions())
	assert.Equal(t, []string{"/" + newVersion + "/sha256sum-amd64.txt", "/" + newVersion + "/k3s"}, rel.Requests())

	// Again: nothing to do, nothing fetched.
	res, err = env.Client.Upgrade(t.Context(), newVersion)
	require.NoError(t, err)
	assert.Equal(t, agent.UpgradeUnchanged, res.Status)
	assert.Len(t, rel.Requests(), 2)
	assert.Len(t, env.System.Actions(), 1)
}

func TestUpgradeArchAssets(t *testing.T) {
	for arch, want := range map[string][]string{
		"arm64": {"sha256sum-arm64.txt", "k3s-arm64"},
		"arm":   {"sha256sum-arm.txt", "k3s-armhf"},
	} {
		t.Run(arch, func(t *testing.T) {
			env, rel := upgradeEnv(t, agenttest.Options{})
			env.System.SetArch(arch)
			_, err := env.Client.Upgrade(t.Context(), newVersion)
			require.NoError(t, err)
			assert.Equal(t, []string{"/" + newVersion + "/" + want[0], "/" + newVersion + "/" + want[1]}, rel.Requests())
		})
	}
	env, rel := upgradeEnv(t, agenttest.Options{})
	env.System.SetArch("riscv64")
	_, err := env.Client.Upgrade(t.Context(), newVersion)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Empty(t, rel.Requests())
}

func TestUpgradeRejectsInjectionBeforeFetch(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	bad := []string{
		"v1.2.3+k3s1;rm -rf /",
		"v1.2.3+k3s1 && reboot",
		"v1.2.3+k3s1$(id)",
		"../../../etc/passwd",
		"v1.2.3+k3s1/../../x",
		"../",
		"v1.2.3%2Bk3s1",
		"v1.2.3%2bk3s1",
		"v1.2.3+k3s1%0a",
		"v1.2.3+k3s1\n",
		"\nv1.2.3+k3s1",
		"v1.2.3+k3s1\r\nHost: evil",
		"v1.2.3+k3s1\x00",
		"v1.2.3 k3s1",
		"v1.2.3+k3s1?x=1",
		"v1.2.3+k3s1#frag",
		"V1.2.3+K3S1",
		"1.2.3+k3s1",
		"v1.2+k3s1",
		"v1.2.3-rc1+k3s1",
		"v1.2.3+k3s",
		"v１.2.3+k3s1",
		"v" + strings.Repeat("1", 70) + ".2.3+k3s1",
		"",
	}
	for _, v := range bad {
		body, err := json.Marshal(agent.UpgradeRequest{Version: v})
		require.NoError(t, err)
		_, ae, _ := call(t, env, http.MethodPost, "/v1/upgrade/k3s", string(body))
		assert.Equal(t, http.StatusBadRequest, ae.Status, "%q", v)
		assert.Equal(t, string(errcode.Invalid), ae.Code, "%q", v)

		_, err = env.Client.Upgrade(t.Context(), v)
		assert.True(t, errcode.Is(err, errcode.Invalid), "client refuses %q: %v", v, err)
	}
	// Shapes that only a hand-written body can take.
	for _, body := range []string{
		`{"version":["v1.2.3+k3s1"]}`,
		`{"version":"v1.2.3+k3s1","url":"http://evil"}`,
		`{"version":"v1.2.3\u002bk3s1;id"}`,
		`{"version":null}`,
		`null`,
		``,
		`{"version":"v1.2.3+k3s1"`,
	} {
		_, ae, _ := call(t, env, http.MethodPost, "/v1/upgrade/k3s", body)
		assert.Equal(t, http.StatusBadRequest, ae.Status, "%s", body)
	}
	assert.Empty(t, rel.Requests(), "the release server got no request")
	assert.Empty(t, env.System.Actions())
	assert.Equal(t, agenttest.DefaultVersion, env.System.InstalledVersion())
}

func TestUpgradeChecksumMismatchSwapsNothing(t *testing.T) {
	rel := agenttest.NewReleaseServer(t)
	rel.PublishCorrupt(newVersion)
	env := agenttest.Start(t, agenttest.Options{ReleaseURL: rel.URL()})
	bin := env.System.K3sBinary()
	old := readFile(t, bin)

	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.Error(t, err)
	assert.Nil(t, res)
	assert.Contains(t, err.Error(), "SHA-256")
	assert.Contains(t, err.Error(), "nothing was installed")
	assert.Equal(t, old, readFile(t, bin), "binary bytes unchanged")
	assert.Equal(t, []string{"k3s"}, binDir(t, env), "no .previous, no temporary file")
	assert.Empty(t, env.System.Actions(), "no restart")
	assert.Len(t, rel.Requests(), 2, "both files were fetched")
}

func TestUpgradeFailedHealthGateRollsBack(t *testing.T) {
	env, _ := upgradeEnv(t, agenttest.Options{HealthTimeout: 300 * time.Millisecond})
	env.System.Break(newVersion)
	bin := env.System.K3sBinary()
	old := readFile(t, bin)

	start := time.Now()
	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.Error(t, err)
	assert.True(t, errors.Is(err, agent.ErrRolledBack), "%v", err)
	require.NotNil(t, res)
	assert.Equal(t, agent.UpgradeRolledBack, res.Status)
	assert.Equal(t, agenttest.DefaultVersion, res.From)
	assert.Equal(t, newVersion, res.To)
	assert.Contains(t, res.Reason, "service is failed")
	assert.Equal(t, agent.StateActive, res.ServiceState, "the old binary runs again")
	assert.Less(t, time.Since(start), 5*time.Second)

	assert.Equal(t, old, readFile(t, bin), "old binary in place")
	assert.Equal(t, agenttest.DefaultVersion, env.System.InstalledVersion())
	info, err := env.Client.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, agent.StateActive, info.ServiceState)
	assert.Equal(t, agenttest.DefaultVersion, info.K3sVersion)
	assert.Equal(t, []agent.ServiceAction{agent.Restart, agent.Restart}, env.System.Actions())
	assert.NotContains(t, binDir(t, env), "k3s.previous")
}

// A restart that fails outright is a failed gate too.
func TestUpgradeRestartErrorRollsBack(t *testing.T) {
	env, _ := upgradeEnv(t, agenttest.Options{HealthTimeout: 300 * time.Millisecond})
	env.System.FailService(errors.New("systemctl: unit k3s.service is masked"))
	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.ErrorIs(t, err, agent.ErrRolledBack)
	assert.Contains(t, res.Reason, "restart: systemctl")
	assert.Equal(t, agenttest.DefaultVersion, env.System.InstalledVersion())
}

func TestUpgradeConcurrentConflict(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	waiting, release := rel.Hold()

	var wg sync.WaitGroup
	var res *agent.UpgradeResult
	var err error
	wg.Go(func() { res, err = env.Client.Upgrade(t.Context(), newVersion) })
	select {
	case <-waiting: // the first upgrade is downloading
	case <-time.After(10 * time.Second):
		t.Fatal("the first upgrade never reached the release server")
	}
	_, err2 := env.Client.Upgrade(t.Context(), "v1.31.3+k3s1")
	require.Error(t, err2)
	assert.True(t, errcode.Is(err2, errcode.Conflict), "%v", err2)
	_, ae, _ := call(t, env, http.MethodPost, "/v1/upgrade/k3s", `{"version":"v1.31.3+k3s1"}`)
	assert.Equal(t, http.StatusConflict, ae.Status)
	assert.True(t, errcode.Is(env.Client.Restart(t.Context()), errcode.Conflict), "service actions wait for the upgrade too")
	_, infoErr := env.Client.Info(t.Context())
	assert.NoError(t, infoErr, "reads are never blocked")

	release()
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, agent.UpgradeUpgraded, res.Status)
}

func TestUpgradeHangingReleaseServerBounded(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{DownloadTimeout: 300 * time.Millisecond})
	rel.SetHang(true)
	old := readFile(t, env.System.K3sBinary())
	start := time.Now()
	_, err := env.Client.Upgrade(t.Context(), newVersion)
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	assert.Contains(t, err.Error(), "no answer within 300ms")
	assert.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
	assert.Less(t, elapsed, 5*time.Second)
	assert.Equal(t, old, readFile(t, env.System.K3sBinary()))
	assert.Equal(t, []string{"k3s"}, binDir(t, env))

	// The agent is free again.
	rel.SetHang(false)
	_, err = env.Client.Upgrade(t.Context(), newVersion)
	require.NoError(t, err)
}

func TestUpgradeMissingRelease(t *testing.T) {
	env, _ := upgradeEnv(t, agenttest.Options{})
	_, err := env.Client.Upgrade(t.Context(), "v9.9.9+k3s9")
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.NotFound), "%v", err)

	env.System.SetRole(agent.RoleNone)
	_, err = env.Client.Upgrade(t.Context(), newVersion)
	assert.True(t, errcode.Is(err, errcode.NotFound), "%v", err)
}
