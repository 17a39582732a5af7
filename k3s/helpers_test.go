package k3s_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/agent"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/remote"
	"github.com/openctl/openctl/state"
)

// standinVersion is what the stand-in built by `make standin` reports.
const standinVersion = "v1.37.2+k3s1"

// binaryDir lays the k3s stand-in ($K3S_STANDIN_BINARY) out as a
// release directory: <dir>/<version>/k3s and sha256sum-amd64.txt.
func binaryDir(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("K3S_STANDIN_BINARY")
	if bin == "" {
		testenv.Unavailable(t, "k3s: K3S_STANDIN_BINARY is not set: run `make standin` (make test does) to build the k3s stand-in")
	}
	dir := t.TempDir()
	vdir := filepath.Join(dir, standinVersion)
	require.NoError(t, os.MkdirAll(vdir, 0o700))
	require.NoError(t, os.Symlink(bin, filepath.Join(vdir, "k3s")))
	sum, err := fileSum(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(vdir, "sha256sum-amd64.txt"), fmt.Appendf(nil, "%s  k3s\n", sum), 0o600))
	return dir
}

var (
	agentOnce sync.Once
	agentDir  string
	agentErr  error
)

// agentBinaryDir builds the real cmd/openctl-agent, static, once per test
// binary, into a directory laid out as the provider's Config.Agent wants:
// openctl-agent-linux-amd64 (the test hosts are this machine).
func agentBinaryDir(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		if agentDir, agentErr = os.MkdirTemp("", "k3s-agent-"); agentErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(agentDir, "openctl-agent-linux-amd64"), "github.com/openctl/openctl/cmd/openctl-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("building openctl-agent: %v: %s", err, out)
		}
	})
	require.NoError(t, agentErr)
	return agentDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if agentDir != "" {
		os.RemoveAll(agentDir)
	}
	os.Exit(code)
}

// env is a K3s provider on test hosts behind an engine.
type env struct {
	net    *k3stest.Network
	prov   *k3s.Provider
	cfg    k3s.Config
	engine *openctl.Engine
	store  state.Store

	mu    sync.Mutex
	steps []string                // the remote commands' steps, "host step"
	hook  func(host, step string) // called for every step, when set
}

// setHook sets (nil: clears) the function called for every step.
func (e *env) setHook(fn func(host, step string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hook = fn
}

// takeSteps returns the steps run since the last call.
func (e *env) takeSteps() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.steps
	e.steps = nil
	return s
}

// newEnv is the K3s provider on a new test network behind an engine that
// also serves others.
func newEnv(t *testing.T, others ...registry.Provider) *env {
	t.Helper()
	dir := binaryDir(t)
	n := k3stest.NewNetwork(t)
	en := &env{net: n}
	record := func(host, step string) {
		en.mu.Lock()
		en.steps = append(en.steps, host+" "+step)
		hook := en.hook
		en.mu.Unlock()
		if hook != nil {
			hook(host, step)
		}
	}
	// The agents download k3s releases for upgrades from the test, on
	// the network's gateway: the files the provider uploads from.
	ln, err := net.Listen("tcp", net.JoinHostPort(n.Gateway().String(), "0"))
	require.NoError(t, err)
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	en.cfg = k3s.Config{BinaryDir: dir, Offline: true, ReadyTimeout: 2 * time.Minute,
		Agent:         &k3s.AgentConfig{BinaryDir: agentBinaryDir(t), ReleaseURL: "http://" + ln.Addr().String()},
		KubeconfigDir: t.TempDir(), KubeConfig: filepath.Join(t.TempDir(), "kube", "config"),
		SSH: remote.Options{OnCommand: record}}
	p, err := k3s.New(en.cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	st := state.NewMemory()
	e, err := openctl.New(openctl.WithProviders(append(others, p)...), openctl.WithStore(st), openctl.WithRetry(backoff.Policy{Initial: 100 * time.Millisecond, Max: time.Second}))
	require.NoError(t, err)
	en.prov, en.engine, en.store = p, e, st
	return en
}

// hosts adds hosts and returns them.
func (e *env) hosts(ctx context.Context, t *testing.T, names ...string) []*k3stest.Host {
	t.Helper()
	var out []*k3stest.Host
	for _, n := range names {
		h, err := e.net.AddHost(ctx, n, k3stest.HostOptions{})
		require.NoError(t, err)
		out = append(out, h)
	}
	return out
}

// cluster is a Cluster on existing hosts, the first of them a server.
func (e *env) cluster(name string, servers, agents []*k3stest.Host) *manifest.Resource {
	var hosts []any
	for role, hs := range map[string][]*k3stest.Host{"server": servers, "agent": agents} {
		for _, h := range hs {
			hosts = append(hosts, map[string]any{
				"name": h.Name(), "address": h.Addr().String(), "role": role,
				"sshHostKey": string(ssh.MarshalAuthorizedKey(h.HostKey())),
			})
		}
	}
	return &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindCluster, Metadata: manifest.Metadata{Name: name}, Spec: map[string]any{
		"hosts": hosts,
		"k3s":   map[string]any{"version": standinVersion},
		"ssh":   map[string]any{"user": k3stest.DefaultUser, "privateKeyPath": e.net.KeyFile()},
	}}
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// dumpLogs logs the end of k3s's log on each host and its env files'
// variable names, to explain a failed apply.
func dumpLogs(ctx context.Context, t *testing.T, hosts ...*k3stest.Host) {
	t.Helper()
	for _, h := range hosts {
		out, _ := h.Run(ctx, "sh", "-c", "journalctl -u k3s -n 30 --no-pager 2>/dev/null; journalctl -u k3s-agent -n 30 --no-pager 2>/dev/null; tail -n 30 /var/log/k3s*.log 2>/dev/null; cat /etc/systemd/system/k3s*.env /etc/rancher/k3s/*.env 2>/dev/null | sed 's/=.*/=.../'")
		t.Logf("%s:\n%s", h.Name(), out)
	}
}

// addRelease adds version to a binary directory (see binaryDir): a copy of
// the stand-in that reports reports (see the stand-in README, "Versions:
// a trailer, not a rebuild"), with its checksum file.
func addRelease(t *testing.T, dir, version, reports string) {
	t.Helper()
	src, err := os.ReadFile(os.Getenv("K3S_STANDIN_BINARY"))
	require.NoError(t, err)
	vdir := filepath.Join(dir, version)
	require.NoError(t, os.MkdirAll(vdir, 0o700))
	bin := append(src, "\n#openctl-k3s-standin version="+reports+" commit=abcdef12\n"...)
	require.NoError(t, os.WriteFile(filepath.Join(vdir, "k3s"), bin, 0o755))
	sum := sha256.Sum256(bin)
	require.NoError(t, os.WriteFile(filepath.Join(vdir, "sha256sum-amd64.txt"), fmt.Appendf(nil, "%x  k3s\n", sum), 0o600))
}

// vip is an address of the test network no host has (hosts take .10 on).
func (e *env) vip() netip.Addr {
	a := e.net.Prefix().Addr().As4()
	a[3] = 254
	return netip.AddrFrom4(a)
}

// recordedPKI is the agent PKI a record keeps (sealed), as JSON fields.
type recordedPKI struct{ Accepted, ClientCert, ClientKey string }

func readPKI(ctx context.Context, e *env, id manifest.ID) (recordedPKI, error) {
	var doc recordedPKI
	rec, err := e.store.Get(ctx, id)
	if err != nil {
		return doc, err
	}
	s, ok := rec.SecretValue("status.agentPKI")
	if !ok {
		return doc, fmt.Errorf("%s records no agent PKI", id.Name)
	}
	return doc, json.Unmarshal([]byte(s.Reveal()), &doc)
}

// agentInfo asks the agent at h for /v1/info with the credentials of doc,
// on a fresh connection.
func agentInfo(ctx context.Context, h *k3stest.Host, doc recordedPKI) (*agent.Info, error) {
	cl, err := agent.NewClient(agent.ClientConfig{Address: h.Addr().String() + ":9443", CABundle: []byte(doc.Accepted),
		CertPEM: []byte(doc.ClientCert), KeyPEM: []byte(doc.ClientKey), Retries: -1})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.Info(ctx)
}
