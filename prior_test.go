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

// located serves Spot, a resource its Get finds only through its prior
// state: status.where, as the engine last recorded it.
type located struct {
	*providertest.Fake
	gets, withPrior  int
	deletesWithPrior int
}

func (l *located) Delete(ctx context.Context, id manifest.ID) error {
	if id.Kind == "Spot" && registry.CallOf(ctx).Prior != nil {
		l.deletesWithPrior++
	}
	return l.Fake.Delete(ctx, id)
}

func (l *located) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Spot", Plural: "spots", ReadsPrior: true}, {Kind: "Thing", Plural: "things"}}
}

func (l *located) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	if id.Kind != "Spot" {
		return l.Fake.Get(ctx, id)
	}
	l.gets++
	prior := registry.CallOf(ctx).Prior
	if prior == nil {
		return nil, errcode.New(errcode.NotFound, "spot: where is "+id.Name+"?")
	}
	l.withPrior++
	where, _ := prior.Status["where"].(string)
	live, err := l.Fake.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if live.Status["where"] != where {
		return nil, errcode.New(errcode.NotFound, "spot: not at "+where)
	}
	return live, nil
}

func TestPriorForKindsThatReadIt(t *testing.T) {
	ctx := t.Context()
	l := &located{Fake: providertest.NewFake("spot", "Spot", "Thing")}
	l.StatusFunc = func(r *manifest.Resource) map[string]any { return map[string]any{"where": "at-" + r.Metadata.Name} }
	st := state.NewMemory()
	e := newEngine(t, l, openctl.WithStore(st))
	spot := &manifest.Resource{APIVersion: "spot.openctl.io/v1", Kind: "Spot", Metadata: manifest.Metadata{Name: "s"}, Spec: map[string]any{}}
	user := &manifest.Resource{APIVersion: "spot.openctl.io/v1", Kind: "Thing", Metadata: manifest.Metadata{Name: "u"},
		Spec: map[string]any{"at": map[string]any{"$ref": map[string]any{"apiVersion": "spot.openctl.io/v1", "kind": "Spot", "name": "s", "field": "status.where"}}}}

	_, err := e.Apply(ctx, spot, user)
	require.NoError(t, err)
	got, err := l.Fake.Get(ctx, user.ID())
	require.NoError(t, err)
	assert.Equal(t, "at-s", got.Spec["at"], "the $ref resolved through a Get that had the prior")

	rep, err := e.Apply(ctx, spot, user)
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.Equal(t, openctl.OutcomeUnchanged, r.Outcome, r.ID.Short())
	}
	f, err := e.Get(ctx, spot.ID())
	require.NoError(t, err)
	assert.Equal(t, "at-s", f.Resource.Status["where"])
	assert.Equal(t, l.gets, l.withPrior, "every Get of the kind got its prior")

	// Delete gets it too.
	_, err = e.Delete(ctx, user.ID(), spot.ID())
	require.NoError(t, err)
	assert.Equal(t, 1, l.deletesWithPrior)

	// Without a record there is no prior: the provider cannot find it.
	_, err = e.Apply(ctx, spot)
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, spot.ID()))
	_, err = e.Get(ctx, spot.ID())
	require.ErrorIs(t, err, errcode.NotFound)
}

// recordsReader applies Things that report, in their status, the names of
// the Things recorded when they were applied.
type recordsReader struct{ *providertest.Fake }

func (r recordsReader) Apply(ctx context.Context, res *manifest.Resource) (*manifest.Resource, error) {
	rs := registry.CallOf(ctx).Records
	if rs == nil {
		return nil, errcode.New(errcode.Internal, "no records")
	}
	recs, err := rs.Records(ctx, testAV, "Thing")
	if err != nil {
		return nil, err
	}
	var names []any
	for _, rec := range recs {
		names = append(names, rec.Metadata.Name)
	}
	out := res.DeepCopy()
	out.Status = map[string]any{"saw": names}
	r.Fake.Put(out)
	return out, nil
}

func TestRecordsForProviders(t *testing.T) {
	ctx := t.Context()
	p := recordsReader{providertest.NewFake("test", "Thing")}
	e := newEngine(t, p, openctl.WithStore(state.NewMemory()))
	_, err := e.Apply(ctx, thing("b", nil))
	require.NoError(t, err)
	_, err = e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	live, err := p.Get(ctx, thingID("a"))
	require.NoError(t, err)
	assert.Equal(t, []any{"b"}, live.Status["saw"], "the records of the kind when it was applied")
	_, err = e.Apply(ctx, thing("c", nil))
	require.NoError(t, err)
	live, err = p.Get(ctx, thingID("c"))
	require.NoError(t, err)
	assert.Equal(t, []any{"a", "b"}, live.Status["saw"], "sorted by name")
}

// keyKeeper's Vaults keep, in a secret status field, a key made at their
// first apply: later applies and reads take it from the prior.
type keyKeeper struct {
	*providertest.Fake
	made int
}

func (k *keyKeeper) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Vault", Plural: "vaults", ReadsPrior: true, SecretFields: []string{"status.key", "spec.password"}}}
}

func (k *keyKeeper) key(ctx context.Context) string {
	if prior := registry.CallOf(ctx).Prior; prior != nil {
		if key, _ := prior.Status["key"].(string); key != "" {
			return key
		}
	}
	k.made++
	return fmt.Sprintf("key-%d", k.made)
}

func (k *keyKeeper) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	out := r.DeepCopy()
	out.Status = map[string]any{"key": k.key(ctx), "password": r.Spec["password"]}
	k.Fake.Put(out)
	return out, nil
}

func (k *keyKeeper) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	live, err := k.Fake.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if prior := registry.CallOf(ctx).Prior; prior != nil && prior.Spec["password"] != live.Spec["password"] {
		return nil, errcode.New(errcode.Internal, "the prior's spec lost its secret")
	}
	return live, nil
}

// TestPriorCarriesSecrets: the prior a provider reads holds the record's
// secret fields in clear, sealed in the state in between; Apply gets it
// too, so a secret made once is kept.
func TestPriorCarriesSecrets(t *testing.T) {
	ctx := t.Context()
	k := &keyKeeper{Fake: providertest.NewFake("vault", "Vault")}
	st := state.NewMemory()
	e := newEngine(t, k, openctl.WithStore(st))
	vault := func(size int64) *manifest.Resource {
		return &manifest.Resource{APIVersion: "vault.openctl.io/v1", Kind: "Vault", Metadata: manifest.Metadata{Name: "v"},
			Spec: map[string]any{"password": "hunter2", "size": size}}
	}
	_, err := e.Apply(ctx, vault(1))
	require.NoError(t, err)
	rec, err := st.Get(ctx, vault(1).ID())
	require.NoError(t, err)
	assert.NotContains(t, rec.Status, "key", "sealed, not in the status")
	sealed, ok := rec.SecretValue("status.key")
	require.True(t, ok)
	assert.Equal(t, "key-1", sealed.Reveal())

	_, err = e.Apply(ctx, vault(2)) // changed: Apply is called again
	require.NoError(t, err)
	f, err := e.Get(ctx, vault(2).ID())
	require.NoError(t, err)
	assert.Equal(t, "key-1", f.Resource.Status["key"], "made once, kept")
	assert.Equal(t, 1, k.made)

	rev := rec.Revealed()
	assert.Equal(t, "key-1", rev.Status["key"])
	assert.Equal(t, "hunter2", rev.Spec["password"])
	assert.Equal(t, int64(1), rev.Spec["size"])
}
