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
// owner's delete.
type cascadeSeer struct {
	*testProvider
	mu   sync.Mutex
	seen map[string]bool
	gets map[string]int
}

func (c *cascadeSeer) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	c.mu.Lock()
	c.gets[id.Name]++
	c.mu.Unlock()
	return c.testProvider.Get(ctx, id)
}

func (c *cascadeSeer) Delete(ctx context.Context, id manifest.ID) error {
	c.mu.Lock()
	c.seen[id.Name] = registry.Cascade(ctx)
	c.mu.Unlock()
	return c.testProvider.Delete(ctx, id)
}

func TestDeleteCascade(t *testing.T) {
	ctx := t.Context()
	p := &cascadeSeer{testProvider: newTestProvider(), seen: map[string]bool{}, gets: map[string]int{}}
	e := newEngine(t, p, openctl.WithStore(state.NewMemory()))
	group := func(n int64) *manifest.Resource {
		return &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": n}}
	}
	_, err := e.Apply(ctx, group(3))
	require.NoError(t, err)
	_, err = e.Apply(ctx, group(2))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"g-2": false}, p.seen, "a child its owner no longer plans is not a cascade: the owner stays")

	clear(p.gets)
	rep, err := e.Delete(ctx, manifest.ID{APIVersion: testAV, Kind: "Group", Name: "g"})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"g-2": false, "g-0": true, "g-1": true, "g": false}, p.seen, "the children go with their owner")
	assert.Equal(t, 3, rep.Count(openctl.OutcomeDeleted))
	// The owner is deleted without being read first: its children are
	// gone, and reading it could only wait on what went with them.
	assert.Zero(t, p.gets["g"], "no Get of the owner: %v", p.gets)
}
