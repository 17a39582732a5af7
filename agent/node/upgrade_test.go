package node_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// A release whose binary reports another version than its tag fails the
// gate at once, not after the health timeout.
func TestUpgradeMislabelledReleaseRollsBackAtOnce(t *testing.T) {
	rel := agenttest.NewReleaseServer(t)
	rel.PublishMislabelled(newVersion, "v1.31.1+k3s1")
	env := agenttest.Start(t, agenttest.Options{ReleaseURL: rel.URL(), HealthTimeout: time.Minute})
	bin := env.System.K3sBinary()
	old := readFile(t, bin)

	start := time.Now()
	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.ErrorIs(t, err, agent.ErrRolledBack)
	assert.Less(t, time.Since(start), 10*time.Second, "well within the health timeout")
	assert.Equal(t, "the new binary reports v1.31.1+k3s1, not "+newVersion, res.Reason)
	assert.Equal(t, agent.StateActive, res.ServiceState)
	assert.Equal(t, old, readFile(t, bin), "old binary in place")
	assert.Equal(t, []agent.ServiceAction{agent.Restart, agent.Restart}, env.System.Actions())
}

// A k3s whose service manager reports it active but that never says it
// is up and running (OpenRC respawning a dying k3s) fails the gate.
func TestUpgradeNeverReadyRollsBack(t *testing.T) {
	env, _ := upgradeEnv(t, agenttest.Options{HealthTimeout: 500 * time.Millisecond})
	env.System.NeverReady(newVersion)
	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.ErrorIs(t, err, agent.ErrRolledBack)
	assert.Equal(t, "not healthy within 500ms: k3s has not reported that it is up and running since the restart", res.Reason)
	assert.Equal(t, agent.StateActive, res.ServiceState)
	assert.Equal(t, agenttest.DefaultVersion, env.System.InstalledVersion())
	assert.Equal(t, []agent.ServiceAction{agent.Restart, agent.Restart}, env.System.Actions())
}

// A previous k3s that does not come back up after the rollback is
// reported, not hidden behind an active service.
func TestUpgradeRollbackPreviousNeverReady(t *testing.T) {
	env, _ := upgradeEnv(t, agenttest.Options{HealthTimeout: 500 * time.Millisecond})
	env.System.NeverReady(newVersion)
	env.System.NeverReady(agenttest.DefaultVersion)
	res, err := env.Client.Upgrade(t.Context(), newVersion)
	require.ErrorIs(t, err, agent.ErrRolledBack)
	assert.Equal(t, "not healthy within 500ms: k3s has not reported that it is up and running since the restart; "+
		"the previous k3s has not reported that it is up and running within 500ms", res.Reason)
	assert.Equal(t, agent.StateActive, res.ServiceState, "what the service manager says")
	assert.Equal(t, agenttest.DefaultVersion, env.System.InstalledVersion())
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

// An upgrade whose download outlasts the server's write (and read)
// timeout still gets its answer: the handler extends its own deadline.
func TestUpgradeOutlastsWriteTimeout(t *testing.T) {
	rel := agenttest.NewReleaseServer(t)
	rel.Publish(newVersion)
	env := agenttest.Start(t, agenttest.Options{ReleaseURL: rel.URL()})
	const timeout = 150 * time.Millisecond
	addr := serveShort(t, env.ServerConfig(), timeout)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	waiting, release := rel.Hold()
	done := make(chan error, 1)
	var res *agent.UpgradeResult
	go func() {
		var err error
		res, err = c.Upgrade(t.Context(), newVersion)
		done <- err
	}()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the upgrade never reached the release server")
	}
	// Time passing is the behaviour under test here, not a wait for an
	// event: the download is held past the server's timeouts.
	time.Sleep(3 * timeout)
	release()
	require.NoError(t, <-done)
	assert.Equal(t, agent.UpgradeUpgraded, res.Status)
}

// staticRelease serves files (path → contents) and records the paths
// requested.
type staticRelease struct {
	mu    sync.Mutex // guards paths
	paths []string
	files map[string]string
}

func (s *staticRelease) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	body, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte(body))
}

func (s *staticRelease) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// The checksum file of the node's architecture lists other assets (the
// arm64 binary, a name that merely starts with "k3s", the right name in a
// subdirectory), each with the hash of the served binary: nothing may be
// installed, and the binary is not even fetched.
func TestUpgradeSumsListDifferentAsset(t *testing.T) {
	bin := string(agenttest.FakeBinary(newVersion))
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(bin)))
	for name, sums := range map[string]string{
		"another arch":     sum + "  k3s-arm64\n",
		"longer name":      sum + "  k3s-airgap-images-amd64.tar\n" + sum + "  k3sx\n",
		"path":             sum + "  dist/artifacts/k3s\n",
		"upper case":       sum + "  K3S\n",
		"three fields":     sum + "  k3s extra\n",
		"no name":          sum + "\n",
		"name in the hash": "k3s  " + sum + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			rel := &staticRelease{files: map[string]string{
				"/" + newVersion + "/sha256sum-amd64.txt": sums,
				"/" + newVersion + "/k3s":                 bin,
			}}
			hs := httptest.NewServer(rel)
			t.Cleanup(hs.Close)
			env := agenttest.Start(t, agenttest.Options{ReleaseURL: hs.URL})
			old := readFile(t, env.System.K3sBinary())

			res, err := env.Client.Upgrade(t.Context(), newVersion)
			require.Error(t, err)
			assert.Nil(t, res)
			assert.True(t, errcode.Is(err, errcode.NotFound), "%v", err)
			assert.Contains(t, err.Error(), "no entry for k3s")
			assert.Equal(t, old, readFile(t, env.System.K3sBinary()))
			assert.Equal(t, []string{"k3s"}, binDir(t, env), "nothing swapped, no temporary file")
			assert.Empty(t, env.System.Actions())
			assert.Equal(t, []string{"/" + newVersion + "/sha256sum-amd64.txt"}, rel.requests(), "the binary is not fetched")
		})
	}
}

// Versions whose digits are not ASCII are refused before any fetch, by
// the client and by the agent.
func TestUpgradeUnicodeDigitsRejected(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	for _, v := range []string{
		"v١.٢.٣+k3s١",       // Arabic-Indic
		"v1.2.3+k3s١",       // one of them
		"v1.2.٣+k3s1",       // one of them
		"v१.2.3+k3s1",       // Devanagari
		"v𝟏.2.3+k3s1",       // mathematical bold
		"v1.2.3+k3s1\u200b", // zero-width space
		"v1.2.3\uff0bk3s1",  // fullwidth plus
		"v1.2.3+k3s1\u0301", // combining mark
	} {
		assert.True(t, errcode.Is(agent.ValidateK3sVersion(v), errcode.Invalid), "%q", v)
		_, err := env.Client.Upgrade(t.Context(), v)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%q: %v", v, err)
		body, err := json.Marshal(agent.UpgradeRequest{Version: v})
		require.NoError(t, err)
		_, ae, _ := call(t, env, http.MethodPost, "/v1/upgrade/k3s", string(body))
		assert.Equal(t, http.StatusBadRequest, ae.Status, "%q", v)
	}
	assert.Empty(t, rel.Requests())
}

// The request body cap: a body over MaxRequestBody, with or without a
// Content-Length, is refused with 413 before anything is fetched; a valid
// body of exactly MaxRequestBody bytes is accepted.
func TestUpgradeBodyCap(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	valid := `{"version":"` + agenttest.DefaultVersion + `"}`
	exact := valid + strings.Repeat(" ", agent.MaxRequestBody-len(valid))
	require.Len(t, exact, agent.MaxRequestBody)
	resp, _, body := call(t, env, http.MethodPost, "/v1/upgrade/k3s", exact)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"status":"unchanged"`)

	over := exact + " "
	_, ae, _ := call(t, env, http.MethodPost, "/v1/upgrade/k3s", over)
	assert.Equal(t, http.StatusRequestEntityTooLarge, ae.Status)
	assert.Equal(t, string(errcode.Invalid), ae.Code)

	// A large chunked body (no Content-Length): the agent stops reading at
	// the cap and answers; it does not wait for the rest.
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = pw.Write([]byte(`{"version":"`))
		for {
			if _, err := pw.Write([]byte(strings.Repeat("1", 1024))); err != nil {
				return
			}
		}
	}()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://"+env.Addr+"/v1/upgrade/k3s", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	r2, err := rawClient(t, env, env.ClientLeaf).Do(req)
	require.NoError(t, err)
	defer r2.Body.Close()
	b2, _ := io.ReadAll(r2.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r2.StatusCode, "%s", b2)
	assert.Empty(t, rel.Requests())
}

// gateSystem blocks the first Restart (the health gate's) until release
// is closed, so a test can act while an upgrade is between the swap and
// the verdict.
type gateSystem struct {
	*agenttest.System
	once    sync.Once
	inGate  chan struct{}
	release chan struct{}
}

func (g *gateSystem) Service(ctx context.Context, a agent.ServiceAction) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.inGate)
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.System.Service(ctx, a)
}

// A restart, a stop or a second upgrade arriving while an upgrade is in
// its health gate (the new binary already swapped in) gets 409; the
// upgrade then finishes normally and nothing else ran.
func TestUpgradeRacingRestart(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	g := &gateSystem{System: env.System, inGate: make(chan struct{}), release: make(chan struct{})}
	cfg := env.ServerConfig()
	cfg.System = g
	cfg.ReleaseURL = rel.URL()
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	done := make(chan error, 1)
	var res *agent.UpgradeResult
	go func() {
		var err error
		res, err = c.Upgrade(t.Context(), newVersion)
		done <- err
	}()
	select {
	case <-g.inGate:
	case <-time.After(10 * time.Second):
		t.Fatal("the upgrade never reached its health gate")
	}
	assert.Equal(t, newVersion, env.System.InstalledVersion(), "the new binary is swapped in")
	for _, call := range []func() error{
		func() error { return c.Restart(t.Context()) },
		func() error { return c.Stop(t.Context()) },
		func() error { _, err := c.Upgrade(t.Context(), "v1.31.3+k3s1"); return err },
	} {
		err := call()
		require.Error(t, err)
		assert.True(t, errcode.Is(err, errcode.Conflict), "%v", err)
	}
	info, err := c.Info(t.Context())
	require.NoError(t, err, "reads are not blocked")
	assert.Equal(t, newVersion, info.K3sVersion)

	close(g.release)
	require.NoError(t, <-done)
	assert.Equal(t, agent.UpgradeUpgraded, res.Status)
	assert.Equal(t, []agent.ServiceAction{agent.Restart}, env.System.Actions(), "only the upgrade's restart ran")
}

// Shutdown waits for an upgrade in flight instead of cutting it off.
func TestShutdownWaitsForUpgrade(t *testing.T) {
	rel := agenttest.NewReleaseServer(t)
	rel.Publish(newVersion)
	env := agenttest.Start(t, agenttest.Options{ReleaseURL: rel.URL()})
	waiting, release := rel.Hold()
	done := make(chan error, 1)
	go func() { _, err := env.Client.Upgrade(t.Context(), newVersion); done <- err }()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the upgrade never reached the release server")
	}
	shut := make(chan error, 1)
	go func() { shut <- env.Server.Shutdown(context.WithoutCancel(t.Context())) }()
	// Shutdown has begun once the listener refuses connections.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", env.Addr)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, 10*time.Second, 5*time.Millisecond, "Shutdown did not close the listener")
	// Nothing is awaited here: the window is the check that Shutdown,
	// under way, does not return while the upgrade is in flight.
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while an upgrade was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	require.NoError(t, <-done)
	require.NoError(t, <-shut)
	assert.Equal(t, newVersion, env.System.InstalledVersion())
}

// A release server that sends the checksum file and the start of the
// binary, then stalls: the download is cut at DownloadTimeout, the
// partial temporary file is removed and nothing is swapped.
func TestUpgradeStallMidBinary(t *testing.T) {
	bin := agenttest.FakeBinary(newVersion)
	sums := fmt.Sprintf("%x  k3s\n", sha256.Sum256(bin))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/" + newVersion + "/sha256sum-amd64.txt":
			_, _ = w.Write([]byte(sums))
		case "/" + newVersion + "/k3s":
			w.Header().Set("Content-Length", fmt.Sprint(len(bin)))
			_, _ = w.Write(bin[:10])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	env := agenttest.Start(t, agenttest.Options{ReleaseURL: hs.URL, DownloadTimeout: 300 * time.Millisecond})
	old := readFile(t, env.System.K3sBinary())
	_, err := env.Client.Upgrade(t.Context(), newVersion)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
	assert.Equal(t, old, readFile(t, env.System.K3sBinary()))
	assert.Equal(t, []string{"k3s"}, binDir(t, env), "the partial download is removed")
	assert.Empty(t, env.System.Actions())
}

// The other way round: an upgrade arriving while a restart runs gets 409
// and fetches nothing.
func TestRestartRacingUpgrade(t *testing.T) {
	env, rel := upgradeEnv(t, agenttest.Options{})
	g := &gateSystem{System: env.System, inGate: make(chan struct{}), release: make(chan struct{})}
	cfg := env.ServerConfig()
	cfg.System = g
	cfg.ReleaseURL = rel.URL()
	_, addr := agenttest.ServeOn(t, "127.0.0.1:0", cfg)
	c := env.NewClient(t, func(c *agent.ClientConfig) { c.Address = addr })

	done := make(chan error, 1)
	go func() { done <- c.Restart(t.Context()) }()
	select {
	case <-g.inGate:
	case <-time.After(10 * time.Second):
		t.Fatal("the restart never started")
	}
	_, err := c.Upgrade(t.Context(), newVersion)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Conflict), "%v", err)
	assert.Empty(t, rel.Requests())
	close(g.release)
	require.NoError(t, <-done)
	assert.Equal(t, agenttest.DefaultVersion, env.System.InstalledVersion())
}
