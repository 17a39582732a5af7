package proxmox_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/stretchr/testify/require"
)

// fastLatencies keep tests quick while leaving the in-between states
// (clone lock, agent not up, only lo) observable.
var fastLatencies = proxmoxtest.Latencies{
	Clone: 60 * time.Millisecond, Config: 10 * time.Millisecond, Start: 20 * time.Millisecond,
	Stop: 10 * time.Millisecond, Shutdown: 20 * time.Millisecond, Reboot: 20 * time.Millisecond,
	Destroy: 10 * time.Millisecond, Template: 10 * time.Millisecond, Resize: 10 * time.Millisecond,
	AgentUp: 80 * time.Millisecond, AgentIP: 40 * time.Millisecond,
}

// fastOpts poll quickly, as tests against fast latencies want.
var fastOpts = []proxmox.Option{
	proxmox.WithPollInterval(5*time.Millisecond, 50*time.Millisecond),
	proxmox.WithAgentPollInterval(10*time.Millisecond, 50*time.Millisecond),
	proxmox.WithRetryBackoff(5 * time.Millisecond),
}

type env struct {
	srv *proxmoxtest.Server
	p   *proxmox.Provider
}

// newEnv starts a simulator and a provider pinned to its certificate.
func newEnv(t testing.TB, simOpts ...proxmoxtest.Option) *env {
	t.Helper()
	srv := proxmoxtest.NewTestServer(t, append([]proxmoxtest.Option{proxmoxtest.WithLatencies(fastLatencies)}, simOpts...)...)
	return &env{srv: srv, p: newProvider(t, srv, nil)}
}

// newProvider builds a provider for srv; mod may change the config.
func newProvider(t testing.TB, srv *proxmoxtest.Server, mod func(*proxmox.Config)) *proxmox.Provider {
	t.Helper()
	id, sec := srv.Token()
	cfg := proxmox.Config{Contexts: map[string]proxmox.Context{"sim": {
		Endpoint: srv.URL(), TokenID: id, TokenSecret: secret.New(sec), Fingerprint: srv.Fingerprint(),
	}}}
	if mod != nil {
		mod(&cfg)
	}
	p, err := proxmox.New(cfg, fastOpts...)
	require.NoError(t, err)
	return p
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// vm returns a VirtualMachine manifest cloning the simulator's template.
func vm(name string, spec map[string]any) *manifest.Resource {
	s := map[string]any{
		"node":     "pve1",
		"template": map[string]any{"name": "ubuntu-24.04-cloud"},
		"cpu":      map[string]any{"cores": int64(2)},
		"memory":   map[string]any{"size": int64(2048)},
		"cloudInit": map[string]any{
			"user":     "ubuntu",
			"sshKeys":  []any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMl4B4B2cKbq+6YJ8z+0KCdZq1z7S4Y7p0hfD0tS8ZkD test@openctl"},
			"ipConfig": map[string]any{"net0": map[string]any{"ip": "dhcp"}},
		},
	}
	maps.Copy(s, spec)
	return &manifest.Resource{APIVersion: proxmox.APIVersion, Kind: proxmox.KindVirtualMachine, Metadata: manifest.Metadata{Name: name}, Spec: s}
}

func vmID(name string) manifest.ID {
	return manifest.ID{APIVersion: proxmox.APIVersion, Kind: proxmox.KindVirtualMachine, Name: name}
}

// writes counts the simulator's non-GET requests.
func writes(srv *proxmoxtest.Server) int {
	n := 0
	for route, c := range srv.RequestCounts() {
		if !strings.HasPrefix(route, "GET ") {
			n += c
		}
	}
	return n
}

// guests lists the simulator's non-template VMs by name.
func guests(srv *proxmoxtest.Server) map[string]proxmoxtest.VM {
	out := map[string]proxmoxtest.VM{}
	for _, v := range srv.VMs() {
		if !v.Template {
			if _, dup := out[v.Name]; dup {
				panic(fmt.Sprintf("duplicate VM name %s", v.Name))
			}
			out[v.Name] = v
		}
	}
	return out
}

func status(t testing.TB, r *manifest.Resource, path string) any {
	t.Helper()
	v, ok, err := manifest.Field(r.Status, path)
	require.NoError(t, err)
	require.True(t, ok, "status.%s missing in %v", path, r.Status)
	return v
}

// withSteps records the steps the provider reports.
func withSteps(ctx context.Context, steps *[]string) context.Context {
	var mu sync.Mutex
	return registry.WithCall(ctx, registry.Call{Step: func(s string) {
		mu.Lock()
		*steps = append(*steps, s)
		mu.Unlock()
	}})
}

func secretOf(s string) secret.Secret { return secret.New(s) }
