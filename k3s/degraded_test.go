package k3s_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/k3s"
	"github.com/openctl/openctl/manifest"
)

// A cluster with machines powered off is a status, not an error: reading
// it answers at once (no retries) and says what is down. One server of
// three off: Degraded, naming it, etcd keeping its quorum; its Node is
// Unreachable with how its host failed. Two of three off: Down (the API
// does not answer), saying the quorum is lost.
func TestDegradedCluster(t *testing.T) {
	t.Parallel()
	s := newSandboxSide(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	_, err := s.engine.Apply(ctx, s.cluster)
	require.NoError(t, err)

	vm := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: name}
	}
	nodeID := func(name string) manifest.ID {
		return manifest.ID{APIVersion: k3s.APIVersion, Kind: k3s.KindNode, Name: name}
	}
	read := func() (map[string]any, time.Duration) {
		t.Helper()
		start := time.Now()
		f, err := s.engine.Get(ctx, s.cluster.ID())
		require.NoError(t, err, "reading a cluster with machines down is not an error")
		return f.Resource.Status, time.Since(start)
	}

	_, err = s.engine.Do(ctx, vm("dev-cp-0"), "stop", nil, nil)
	require.NoError(t, err)
	var st map[string]any
	var took time.Duration
	require.Eventually(t, func() bool {
		st, took = read()
		return st["phase"] == k3s.PhaseDegraded
	}, time.Minute, time.Second, "one server off: Degraded")
	msg, _ := st["message"].(string)
	assert.Contains(t, msg, "dev-cp-0 is Unreachable (k3s: node dev-cp-0: connect: ")
	assert.Contains(t, msg, "etcd keeps its quorum: 2 of 3 servers up")
	assert.Equal(t, "4/5", st["readyNodes"])
	assert.Less(t, took, 10*time.Second, "read at once, not retried")
	n, err := s.engine.Get(ctx, nodeID("dev-cp-0"))
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseUnreachable, n.Resource.Status["phase"])
	assert.Contains(t, n.Resource.Status["message"], "connect: ")
	n, err = s.engine.Get(ctx, nodeID("dev-cp-1"))
	require.NoError(t, err)
	assert.Equal(t, k3s.PhaseReady, n.Resource.Status["phase"])
	_, err = s.engine.Do(ctx, vm("dev-cp-1"), "stop", nil, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, _ = read()
		return st["phase"] == k3s.PhaseDown
	}, 2*time.Minute, time.Second, "two of three servers off: Down\n%v", st)
	assert.Contains(t, st["message"], "the API at https://")
	assert.Contains(t, st["message"], "etcd has lost its quorum: 1 of 3 servers up, 2 needed")
}
