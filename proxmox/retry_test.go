package proxmox_test

// Tests of who retries (the package doc's "Who retries"): the engine
// retries whole calls; Get, List and Diff make each request once.

import (
	"context"
	"testing"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	routeResources = "GET /cluster/resources"
	routeConfig    = "GET /nodes/{node}/qemu/{vmid}/config"
	routePending   = "GET /nodes/{node}/qemu/{vmid}/pending"
)

// requestsDuring returns the requests per route that f made.
func requestsDuring(srv *proxmoxtest.Server, f func()) map[string]int {
	before := srv.RequestCounts()
	f()
	out := map[string]int{}
	for route, n := range srv.RequestCounts() {
		if d := n - before[route]; d > 0 {
			out[route] = d
		}
	}
	return out
}

// TestGetUnderPersistentFaultIsRetriedOnce: with every read of a running
// VM's pending changes failing with HTTP 500, one Get of the VM makes one
// request per route it reads (/cluster/resources, config, pending: the
// read stops at the failure) — the provider does not retry — and the
// engine, which Gets the VM when re-applying an unchanged spec, makes its
// attempts × those requests, not attempts × the provider's attempts.
func TestGetUnderPersistentFaultIsRetriedOnce(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithFaults(proxmoxtest.Faults{Routes: []string{routePending}, ErrorRate: 1}))
	ctx := ctxT(t)
	const attempts = 4
	eng := engineWithRetry(t, e.p, 1, attempts)
	r := vm("retry-01", nil)
	// Creating a VM reads no pending changes: a fresh VM has none.
	rep, err := eng.Apply(ctx, r)
	require.NoError(t, err)
	require.NoError(t, rep.Err())

	perGet := map[string]int{routeResources: 1, routeConfig: 1, routePending: 1}

	t.Run("provider Get", func(t *testing.T) {
		var err error
		got := requestsDuring(e.srv, func() { _, err = e.p.Get(ctx, vmID("retry-01")) })
		require.Error(t, err)
		assert.True(t, errcode.Is(err, errcode.Transient), "a 5xx is TRANSIENT for the engine to retry: %v", err)
		assert.Equal(t, perGet, got, "one request per route: no retry inside Get")
		t.Logf("one provider Get: %v", got)
	})

	t.Run("engine", func(t *testing.T) {
		var rep interface{ Err() error }
		got := requestsDuring(e.srv, func() {
			var err error
			rep, err = eng.Apply(ctx, r) // unchanged spec: the engine Gets the live VM
			_ = err                      // the failure is the resource's, in the report
		})
		require.Error(t, rep.Err())
		assert.True(t, errcode.Is(rep.Err(), errcode.Transient), "%v", rep.Err())
		want := map[string]int{"GET /version": 1} // the Apply's one check that the endpoint answers (registry.Pinger)
		for route, n := range perGet {
			want[route] = attempts * n
		}
		assert.Equal(t, want, got, "the engine's %d attempts × the requests of one Get", attempts)
		t.Logf("one Get through the engine (%d attempts): %v", attempts, got)
	})
}

// TestReadsUnderPersistentFaultAreNotRetried: with /cluster/resources
// failing with HTTP 500, every read of Templates, Nodes and
// VirtualMachines asks for it exactly once and fails TRANSIENT.
func TestReadsUnderPersistentFaultAreNotRetried(t *testing.T) {
	e := newEnv(t, proxmoxtest.WithFaults(proxmoxtest.Faults{Routes: []string{routeResources}, ErrorRate: 1}))
	ctx := ctxT(t)
	id := func(kind, name string) manifest.ID {
		return manifest.ID{APIVersion: proxmox.APIVersion, Kind: kind, Name: name}
	}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"get VirtualMachine", func(ctx context.Context) error { _, err := e.p.Get(ctx, vmID("web-01")); return err }},
		{"get Template", func(ctx context.Context) error {
			_, err := e.p.Get(ctx, id(proxmox.KindTemplate, "ubuntu-24.04-cloud"))
			return err
		}},
		{"get Node", func(ctx context.Context) error { _, err := e.p.Get(ctx, id(proxmox.KindNode, "pve1")); return err }},
		{"list VirtualMachines", func(ctx context.Context) error {
			_, err := e.p.List(ctx, proxmox.KindVirtualMachine)
			return err
		}},
		{"list Templates", func(ctx context.Context) error { _, err := e.p.List(ctx, proxmox.KindTemplate); return err }},
		{"list Nodes", func(ctx context.Context) error { _, err := e.p.List(ctx, proxmox.KindNode); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			got := requestsDuring(e.srv, func() { err = tc.call(ctx) })
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Transient), "%v", err)
			assert.Equal(t, map[string]int{routeResources: 1}, got)
		})
	}
}
