package k3s_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
)

// An agent install interrupted between the agent's key and its
// certificate leaves a service that fails on every start (the key
// missing); the next apply gives it fresh credentials and it answers.
func TestApplyRepairsAgentWithoutKey(t *testing.T) {
	t.Parallel()
	s, ctx := appliedSandbox(t)
	_, err := s.run(ctx, "dev-worker-1", "rm -f /etc/openctl-agent/server.key && systemctl restart openctl-agent")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _ := s.run(ctx, "dev-worker-1", "systemctl is-active openctl-agent || true")
		return strings.TrimSpace(out) != "active"
	}, 30*time.Second, 200*time.Millisecond, "the agent fails without its key")

	_, err = s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)
	out, err := s.run(ctx, "dev-worker-1", "systemctl is-active openctl-agent; test -s /etc/openctl-agent/server.key && echo key")
	require.NoError(t, err)
	assert.Equal(t, "active\nkey\n", out)
	c, err := s.engine.Get(ctx, s.cluster.ID())
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, c.Resource.Status["phase"], "%v", c.Resource.Status["message"])
}

// appliedSandbox is the example applied on a sandbox side, and a context
// bounding the test.
func appliedSandbox(t *testing.T) (*diffSide, context.Context) {
	t.Helper()
	s := newSandboxSide(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	t.Cleanup(cancel)
	_, err := s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)
	return s, ctx
}

// A node whose host does not answer is Stopped when the VM its spec
// refers to reads as stopped (registry.Call.Read), Unreachable saying so
// when it does not exist, else Unreachable with how the host failed;
// either way what was recorded of it stays.
func TestNodeStoppedOrUnreachable(t *testing.T) {
	t.Parallel()
	p, err := k3s.New(k3s.Config{BinaryDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close()) // nothing listens there now

	vm := manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "w-0"}
	id := manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: "w-0"}
	prior := &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name},
		Spec:   map[string]any{"role": "agent", "cluster": "c", "host": refs.Marker(vm, "status.ip")},
		Status: map[string]any{"role": "agent", "address": "127.0.0.1", "cluster": "c", "ssh": map[string]any{"port": int64(port)}}}
	// Deleted on its own while its VM is off, the node cannot be
	// uninstalled: refused, saying what to do.
	stopped := registry.WithCall(t.Context(), registry.Call{Prior: prior, Read: func(context.Context, manifest.ID) (*manifest.Resource, error) {
		return &manifest.Resource{Status: map[string]any{"state": "stopped"}}, nil
	}})
	err = p.Delete(stopped, id)
	require.ErrorIs(t, err, errcode.Invalid)
	assert.ErrorContains(t, err, "its VirtualMachine w-0 is stopped, so k3s cannot be uninstalled from it: start it (openctl proxmox start vm w-0)")

	for _, tc := range []struct {
		state, phase, message string
	}{
		{"stopped", k3s.PhaseStopped, "its VirtualMachine w-0 is stopped"},
		{"running", k3s.PhaseUnreachable, "k3s: node w-0: connect: "},
		{"gone", k3s.PhaseUnreachable, "its VirtualMachine w-0 does not exist (destroyed outside openctl?): apply creates it again"},
	} {
		var asked []manifest.ID
		ctx := registry.WithCall(t.Context(), registry.Call{Prior: prior, Read: func(_ context.Context, id manifest.ID) (*manifest.Resource, error) {
			asked = append(asked, id)
			if tc.state == "gone" {
				return nil, errcode.New(errcode.NotFound, "no such VM")
			}
			return &manifest.Resource{Status: map[string]any{"state": tc.state}}, nil
		}})
		start := time.Now()
		r, err := p.Get(ctx, id)
		require.NoError(t, err, tc.state)
		assert.Less(t, time.Since(start), 10*time.Second, "read at once")
		assert.Equal(t, tc.phase, r.Status["phase"], tc.state)
		assert.Contains(t, r.Status["message"], tc.message)
		assert.Equal(t, "c", r.Status["cluster"], "what was recorded of it stays")
		assert.Equal(t, []manifest.ID{vm}, asked, "its VM was asked")
	}
}

// A cluster with a VM powered off is deleted whole: the stopped node has
// nothing to uninstall (its VM goes too), nothing is retried.
func TestDeleteClusterWithStoppedVM(t *testing.T) {
	t.Parallel()
	s, ctx := appliedSandbox(t)
	_, err := s.engine.Do(ctx, manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "dev-cp-0"}, "stop", nil, nil)
	require.NoError(t, err)
	start := time.Now()
	rep, err := s.engine.Delete(ctx, s.cluster.ID())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second)
	for _, r := range rep.Results {
		assert.NoError(t, r.Err, r.ID.Short())
	}
	assert.Empty(t, guestVMs(s.srv), "every VM is gone")
}
