package k3s_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/k3s/k3stest"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry/providertest"
)

// conformanceHosts gives each fixture the kit applies a test host of its
// own, made up front; the names the kit only reads or validates get a
// documentation address nothing answers on.
type conformanceHosts struct {
	mu    sync.Mutex
	hosts map[string]*k3stest.Host
}

const conformanceParallel = 2

func newConformanceHosts(t *testing.T, e *env) *conformanceHosts {
	t.Helper()
	c := &conformanceHosts{hosts: map[string]*k3stest.Host{}}
	names := []string{"conformance-apply", "conformance-update", "conformance-delete"}
	for i := range conformanceParallel {
		names = append(names, fmt.Sprintf("conformance-par-%d", i))
	}
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			h, err := e.net.AddHost(t.Context(), fmt.Sprintf("c%d", i), k3stest.HostOptions{})
			require.NoError(t, err)
			c.mu.Lock()
			c.hosts[n] = h
			c.mu.Unlock()
		})
	}
	wg.Wait()
	return c
}

// where returns the address and pinned host key for a fixture.
func (c *conformanceHosts) where(name string) (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.hosts[name]; h != nil {
		return h.Addr().String(), string(ssh.MarshalAuthorizedKey(h.HostKey()))
	}
	return "192.0.2.1", ""
}

func TestConformanceNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hosts := newConformanceHosts(t, e)
	providertest.RunConformance(t, e.prov, providertest.Options{
		Parallel: conformanceParallel,
		NewResource: func(name string) *manifest.Resource {
			addr, key := hosts.where(name)
			spec := map[string]any{
				"role": "server", "init": true, "address": addr,
				"k3s": map[string]any{"version": standinVersion},
				"ssh": map[string]any{"user": k3stest.DefaultUser, "privateKeyPath": e.net.KeyFile()},
			}
			if key != "" {
				spec["sshHostKey"] = key
			}
			return &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Metadata: manifest.Metadata{Name: name}, Spec: spec}
		},
		Mutate: func(r *manifest.Resource) *manifest.Resource {
			r.Spec["labels"] = []any{"tier=conformance"}
			return r
		},
	})
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hosts := newConformanceHosts(t, e)
	providertest.RunConformance(t, e.prov, providertest.Options{
		Parallel: conformanceParallel,
		NewResource: func(name string) *manifest.Resource {
			addr, key := hosts.where(name)
			host := map[string]any{"name": name + "-s", "address": addr, "role": "server"}
			if key != "" {
				host["sshHostKey"] = key
			}
			return &manifest.Resource{APIVersion: k3s.APIVersion, Kind: k3s.KindCluster, Metadata: manifest.Metadata{Name: name}, Spec: map[string]any{
				"hosts": []any{host},
				"k3s":   map[string]any{"version": standinVersion},
				"ssh":   map[string]any{"user": k3stest.DefaultUser, "privateKeyPath": e.net.KeyFile()},
			}}
		},
		Mutate: func(r *manifest.Resource) *manifest.Resource {
			r.Spec["tlsSANs"] = []any{"k8s.conformance.test"}
			return r
		},
	})
}
