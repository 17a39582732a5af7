package openctl_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
	"github.com/openctl/openctl/state"
)

// packer serves Pack, a resource whose Apply applies spec.count Things
// through the registry on its own — as an exec plugin dispatching does —
// and reports them to the engine's ChildRecorder. With failAfter > 0 it
// fails once that many Things exist; with shrink it deletes the Things
// a smaller count drops.
type packer struct {
	*providertest.Fake
	reg       *registry.Registry
	failAfter int
}

const packAV = "pack.openctl.io/v1"

func packID(name string) manifest.ID {
	return manifest.ID{APIVersion: packAV, Kind: "Pack", Name: name}
}

func (p *packer) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	rec := registry.CallOf(ctx).Children
	if rec == nil {
		return nil, errcode.New(errcode.Internal, "no child recorder installed")
	}
	n, _ := r.Spec["count"].(int64)
	for i := range n {
		c := thing(fmt.Sprintf("%s-%d", r.Metadata.Name, i), nil)
		c.SetOwner(r.ID())
		prov, _, err := p.reg.Lookup(c.ID())
		if err != nil {
			return nil, err
		}
		live, err := prov.Apply(ctx, c)
		if err != nil {
			return nil, err
		}
		if err := rec.ChildApplied(ctx, c, live); err != nil {
			return nil, err
		}
		if p.failAfter > 0 && int(i)+1 == p.failAfter {
			return nil, errcode.New(errcode.Internal, "pack: boom after a child")
		}
	}
	for i := n; ; i++ {
		id := thingID(fmt.Sprintf("%s-%d", r.Metadata.Name, i))
		prov, _, _ := p.reg.Lookup(id)
		if _, err := prov.Get(ctx, id); err != nil {
			break
		}
		if err := prov.Delete(ctx, id); err != nil {
			return nil, err
		}
		if err := rec.ChildDeleted(ctx, id); err != nil {
			return nil, err
		}
	}
	return p.Fake.Apply(ctx, r)
}

func newPacker(t *testing.T) (*openctl.Engine, *packer, *testProvider, state.Store) {
	t.Helper()
	things := newTestProvider()
	reg := &registry.Registry{}
	pk := &packer{Fake: providertest.NewFake("pack", "Pack"), reg: reg}
	require.NoError(t, reg.Register(things, pk))
	st := state.NewMemory()
	e, err := openctl.New(openctl.WithRegistry(reg), openctl.WithStore(st))
	require.NoError(t, err)
	return e, pk, things, st
}

func pack(name string, count int64) *manifest.Resource {
	return &manifest.Resource{APIVersion: packAV, Kind: "Pack", Metadata: manifest.Metadata{Name: name}, Spec: map[string]any{"count": count}}
}

func TestProviderRecordedChildren(t *testing.T) {
	ctx := t.Context()
	e, _, things, st := newPacker(t)

	_, err := e.Apply(ctx, pack("p", 3))
	require.NoError(t, err)
	rec, err := st.Get(ctx, packID("p"))
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{thingID("p-0"), thingID("p-1"), thingID("p-2")}, rec.Children)
	for _, id := range rec.Children {
		c, err := st.Get(ctx, id)
		require.NoError(t, err, "each child has its own record")
		require.NotNil(t, c.Owner)
		assert.Equal(t, packID("p"), *c.Owner)
		assert.Equal(t, "Pack", c.Labels[manifest.LabelOwnerKind])
		assert.Equal(t, "ip-of-"+id.Name, c.Status["ip"], "the child's status is recorded")
		_, ok := c.Status["token"]
		assert.False(t, ok, "a secret status field goes to the sealed secrets, not the status")
		assert.Equal(t, "secret-of-"+id.Name, c.Secrets["status.token"].Reveal())
	}

	// Unchanged: the children stay listed.
	rep, err := e.Apply(ctx, pack("p", 3))
	require.NoError(t, err)
	assert.Equal(t, openctl.OutcomeUnchanged, rep.Results[0].Outcome)
	rec, err = st.Get(ctx, packID("p"))
	require.NoError(t, err)
	assert.Len(t, rec.Children, 3)

	// A child deleted by its owner's provider is forgotten and unlisted.
	_, err = e.Apply(ctx, pack("p", 1))
	require.NoError(t, err)
	rec, err = st.Get(ctx, packID("p"))
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{thingID("p-0")}, rec.Children)
	_, err = st.Get(ctx, thingID("p-2"))
	assert.ErrorIs(t, err, errcode.NotFound)

	// Deleting a child directly is refused while its owner exists.
	_, err = e.Delete(ctx, thingID("p-0"))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "belongs to Pack/p")

	// Deleting the owner deletes the children first.
	before := len(things.Log())
	rep, err = e.Delete(ctx, packID("p"))
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeDeleted))
	assert.Equal(t, []string{"delete Thing/p-0"}, things.Log()[before:])
	left, err := st.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Empty(t, left)
}

// An apply that fails after its provider made children leaves them
// recorded and owned, though the owner itself is not recorded; deleting
// the owner still deletes them.
func TestProviderRecordedChildrenAfterFailure(t *testing.T) {
	ctx := t.Context()
	e, pk, things, st := newPacker(t)
	pk.failAfter = 2

	_, err := e.Apply(ctx, pack("p", 3))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom after a child")
	_, err = st.Get(ctx, packID("p"))
	require.ErrorIs(t, err, errcode.NotFound, "the failed owner is not recorded")
	owned, err := st.List(ctx, state.Filter{Owner: new(packID("p"))})
	require.NoError(t, err)
	require.Len(t, owned, 2, "the children made before the failure are recorded")

	rep, err := e.Delete(ctx, packID("p"))
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeDeleted), "both children deleted; the owner was never made")
	for _, n := range []string{"p-0", "p-1"} {
		_, err := things.Get(ctx, thingID(n))
		assert.ErrorIs(t, err, errcode.NotFound)
	}
	left, err := st.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Empty(t, left)
}

func TestChildRecorderRefusesSelf(t *testing.T) {
	reg := &registry.Registry{}
	require.NoError(t, reg.Register(&selfRecorder{providertest.NewFake("pack", "Pack")}))
	e, err := openctl.New(openctl.WithRegistry(reg), openctl.WithStore(state.NewMemory()))
	require.NoError(t, err)
	_, err = e.Apply(t.Context(), pack("p", 0))
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "cannot be its own child")
}

type selfRecorder struct{ *providertest.Fake }

func (s *selfRecorder) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	if err := registry.CallOf(ctx).Children.ChildListed(ctx, r.ID()); err != nil {
		return nil, err
	}
	return s.Fake.Apply(ctx, r)
}
