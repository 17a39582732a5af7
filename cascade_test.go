package openctl_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// cascadeSeer records, for every delete, whether it cascaded from the
// owner's delete, and for every apply and delete the count its
// registry.Call's Parent asks for (-1: no Parent).
type cascadeSeer struct {
	*testProvider
	mu      sync.Mutex
	seen    map[string]bool
	gets    map[string]int
	parents map[string]int64
}

func (c *cascadeSeer) parent(ctx context.Context, op, name string) {
	n := int64(-1)
	if p := registry.CallOf(ctx).Parent; p != nil {
		n, _ = p.Spec["count"].(int64)
	}
	c.mu.Lock()
	c.parents[op+" "+name] = n
	c.mu.Unlock()
}

func (c *cascadeSeer) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	c.parent(ctx, "apply", r.Metadata.Name)
	return c.testProvider.Apply(ctx, r)
}

func (c *cascadeSeer) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	c.mu.Lock()
	c.gets[id.Name]++
	c.mu.Unlock()
	return c.testProvider.Get(ctx, id)
}

func (c *cascadeSeer) Delete(ctx context.Context, id manifest.ID) error {
	c.mu.Lock()
	c.seen[id.Name] = registry.CallOf(ctx).Cascade
	c.mu.Unlock()
	c.parent(ctx, "delete", id.Name)
	return c.testProvider.Delete(ctx, id)
}

func TestDeleteCascade(t *testing.T) {
	ctx := t.Context()
	p := &cascadeSeer{testProvider: newTestProvider(), seen: map[string]bool{}, gets: map[string]int{}, parents: map[string]int64{}}
	e := newEngine(t, p, openctl.WithStore(state.NewMemory()))
	group := func(n int64) *manifest.Resource {
		return &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": n}}
	}
	_, err := e.Apply(ctx, group(3))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"apply g": -1, "apply g-0": 3, "apply g-1": 3, "apply g-2": 3}, p.parents, "a child is applied knowing its parent as now applied")
	clear(p.parents)
	_, err = e.Apply(ctx, group(2))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"g-2": false}, p.seen, "a child its owner no longer plans is not a cascade: the owner stays")
	assert.Equal(t, int64(2), p.parents["delete g-2"], "a pruned child is deleted knowing its parent as now written")
	assert.Equal(t, int64(-1), p.parents["apply g"])

	clear(p.gets)
	rep, err := e.Delete(ctx, manifest.ID{APIVersion: testAV, Kind: "Group", Name: "g"})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"g-2": false, "g-0": true, "g-1": true, "g": false}, p.seen, "the children go with their owner")
	assert.Equal(t, int64(-1), p.parents["delete g-0"], "no Parent when the owner is deleted, not applied")
	assert.Equal(t, 3, rep.Count(openctl.OutcomeDeleted))
	// The owner is deleted without being read first: its children are
	// gone, and reading it could only wait on what went with them.
	assert.Zero(t, p.gets["g"], "no Get of the owner: %v", p.gets)
}
