package openctl_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// aliasProvider serves Thing also under its older name Gadget.
type aliasProvider struct{ *testProvider }

func (p aliasProvider) Kinds() []registry.Kind {
	ks := p.testProvider.Kinds()
	ks[0].Aliases = []string{"Gadget"}
	return ks
}

// A manifest or a $ref written with a kind's alias is read as the kind:
// applied, recorded and resolved as a Thing, with no Gadget anywhere,
// and found, acted on and deleted by either name.
func TestKindAlias(t *testing.T) {
	ctx := t.Context()
	st := state.NewMemory()
	p := aliasProvider{newTestProvider()}
	e := newEngine(t, p, openctl.WithStore(st))
	gadget := func(name string, spec map[string]any) *manifest.Resource {
		r := thing(name, spec)
		r.Kind = "Gadget"
		return r
	}
	a := gadget("a", nil)
	b := thing("b", map[string]any{"peer": refs.Marker(manifest.ID{APIVersion: testAV, Kind: "Gadget", Name: "a"}, "status.ip")})
	rep, err := e.Apply(ctx, a, b)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeCreated))
	assert.Equal(t, "Gadget", a.Kind, "the caller's manifest is left as written")

	recs, err := st.List(ctx, state.Filter{})
	require.NoError(t, err)
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID().Short())
	}
	assert.Equal(t, []string{"Thing/a", "Thing/b"}, ids, "recorded under the kind, never the alias")
	live, err := p.Get(ctx, thingID("b"))
	require.NoError(t, err)
	assert.Equal(t, "ip-of-a", live.Spec["peer"], "the $ref through the alias resolved")
	rec, err := st.Get(ctx, thingID("b"))
	require.NoError(t, err)
	deps, err := refs.Dependencies(rec.Resource())
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{thingID("a")}, deps, "the recorded $ref names the kind")

	// Applied again under either name: nothing changes.
	rep, err = e.Apply(ctx, thing("a", nil), b)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeUnchanged))
	plan, err := e.Plan(ctx, gadget("a", nil))
	require.NoError(t, err)
	assert.False(t, plan.HasChanges())

	alias := manifest.ID{APIVersion: testAV, Kind: "Gadget", Name: "a"}
	found, err := e.Get(ctx, alias)
	require.NoError(t, err)
	require.NotNil(t, found.Record)
	assert.Equal(t, thingID("a"), found.Record.ID())
	inv, err := e.Inventory(ctx, testAV, "Gadget", openctl.InventoryOptions{})
	require.NoError(t, err)
	assert.Len(t, inv.Resources, 2)

	rep, err = e.Delete(ctx, alias)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeDeleted))
	_, err = st.Get(ctx, thingID("a"))
	assert.Error(t, err, "the record went with it")
}

// A record kept under a name that has since become an alias (K3s nodes
// applied as K3sNode) is moved to the kind's name by the next apply, its
// $refs read the same way: the resource is found, not created again.
func TestAliasRecordMoved(t *testing.T) {
	ctx := t.Context()
	st := state.NewMemory()
	p := aliasProvider{newTestProvider()}
	// Recorded as the kind while Gadget was a kind of its own.
	old := newEngine(t, p, openctl.WithStore(st))
	_, err := old.Apply(ctx, thing("a", nil), thing("b", map[string]any{"peer": refs.Marker(thingID("a"), "status.ip")}))
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		rec, err := st.Get(ctx, thingID(name))
		require.NoError(t, err)
		require.NoError(t, st.Delete(ctx, thingID(name)))
		rec = rec.Clone()
		rec.Kind, rec.Generation = "Gadget", 0
		if name == "b" {
			rec.Spec["peer"] = refs.Marker(manifest.ID{APIVersion: testAV, Kind: "Gadget", Name: "a"}, "status.ip")
		}
		_, err = st.Put(ctx, rec)
		require.NoError(t, err)
	}

	e := newEngine(t, p, openctl.WithStore(st))
	rep, err := e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUnchanged), "found under the kind's name, not created again")
	recs, err := st.List(ctx, state.Filter{})
	require.NoError(t, err)
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID().Short())
	}
	assert.Equal(t, []string{"Gadget/b", "Thing/a"}, ids, "only what the operation touched moved")

	// Deleting by either name moves it first, $ref read as the kind.
	_, err = e.Delete(ctx, manifest.ID{APIVersion: testAV, Kind: "Gadget", Name: "b"})
	require.NoError(t, err)
	recs, err = st.List(ctx, state.Filter{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, thingID("a"), recs[0].ID())

	// A move a kill interrupted — both records, one lineage — is
	// finished; two unrelated records are both left.
	rec, err := st.Get(ctx, thingID("a"))
	require.NoError(t, err)
	dup := rec.Clone()
	dup.Kind, dup.Generation = "Gadget", 0
	_, err = st.Put(ctx, dup)
	require.NoError(t, err)
	_, err = e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	_, err = st.Get(ctx, manifest.ID{APIVersion: testAV, Kind: "Gadget", Name: "a"})
	assert.Error(t, err, "the half-moved record is gone")

	other := rec.Clone()
	other.Kind, other.Generation, other.Lineage = "Gadget", 0, "another-lineage"
	_, err = st.Put(ctx, other)
	require.NoError(t, err)
	_, err = e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	kept, err := st.Get(ctx, manifest.ID{APIVersion: testAV, Kind: "Gadget", Name: "a"})
	require.NoError(t, err, "an unrelated record under the alias is left alone")
	assert.Equal(t, "another-lineage", kept.Lineage)
}
