package openctl_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry/providertest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// names returns the names of rs, in order.
func names(rs []*manifest.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Metadata.Name
	}
	return out
}

// failGetStore is a Memory store (a RawStore) whose Get of one ID fails,
// as opening a record's sealed secrets does without the passphrase.
type failGetStore struct {
	*state.Memory
	fail manifest.ID
}

func (s failGetStore) Get(ctx context.Context, id manifest.ID) (*state.Record, error) {
	if id == s.fail {
		return nil, errors.New("state: opening the secrets of " + id.Short() + ": no passphrase")
	}
	return s.Memory.Get(ctx, id)
}

// TestInventory: recorded resources show their recorded labels and spec
// with the live status; unrecorded live ones show as listed; all sorted by
// name; ages come from the records.
func TestInventory(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	a, c := thing("a", map[string]any{"size": int64(1)}), thing("c", nil)
	a.Metadata.Labels = map[string]string{"app": "web"}
	_, err := e.Apply(ctx, a, c)
	require.NoError(t, err)
	// Drift: the live resource changed behind openctl's back.
	p.Put(&manifest.Resource{APIVersion: testAV, Kind: "Thing", Metadata: manifest.Metadata{Name: "a", Labels: map[string]string{"app": "other"}},
		Spec: map[string]any{"size": int64(2)}, Status: map[string]any{"ip": "10.0.0.9"}})
	// Not applied by openctl.
	p.Put(&manifest.Resource{APIVersion: testAV, Kind: "Thing", Metadata: manifest.Metadata{Name: "b"},
		Spec: map[string]any{"size": int64(3)}, Status: map[string]any{"ip": "10.0.0.2"}})

	writes := p.Calls().Writes()

	inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, names(inv.Resources))
	ra, rb := inv.Resources[0], inv.Resources[1]
	assert.Equal(t, map[string]any{"size": int64(1)}, ra.Spec, "the spec as recorded")
	assert.Equal(t, map[string]string{"app": "web"}, ra.Metadata.Labels, "the labels as recorded")
	assert.Equal(t, map[string]any{"ip": "10.0.0.9"}, ra.Status, "the live status")
	assert.Equal(t, map[string]any{"size": int64(3)}, rb.Spec, "unrecorded: as listed")
	assert.Equal(t, map[string]any{"ip": "10.0.0.2"}, rb.Status)
	assert.Empty(t, inv.Gone)

	require.Len(t, inv.Records, 2)
	assert.NotContains(t, inv.Records, thingID("b"))
	for _, n := range []string{"a", "c"} {
		rec := inv.Records[thingID(n)]
		require.NotNil(t, rec, n)
		assert.WithinDuration(t, time.Now(), rec.CreatedAt, time.Minute, n)
	}
	assert.Equal(t, writes, p.Calls().Writes(), "reading writes nothing")
}

// TestInventoryGone: a recorded resource that no longer exists is shown as
// recorded without status and reported in Gone, not as an error.
func TestInventoryGone(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("a", nil), thing("b", map[string]any{"size": int64(2)}))
	require.NoError(t, err)
	p.Remove(thingID("b"))

	for _, opts := range []openctl.InventoryOptions{{}, {Names: []string{"b", "a"}}} {
		t.Run(fmt.Sprint(opts.Names), func(t *testing.T) {
			inv, err := e.Inventory(ctx, testAV, "Thing", opts)
			require.NoError(t, err)
			assert.Equal(t, []manifest.ID{thingID("b")}, inv.Gone)
			var b *manifest.Resource
			for _, r := range inv.Resources {
				if r.Metadata.Name == "b" {
					b = r
				}
			}
			require.NotNil(t, b, "a gone resource is still shown")
			assert.Equal(t, map[string]any{"size": int64(2)}, b.Spec)
			assert.Nil(t, b.Status)
			assert.Contains(t, inv.Records, thingID("b"))
		})
	}
}

// TestInventoryNames: names come in the order given; an unrecorded live
// one shows as the provider reports it; one neither recorded nor live is a
// NotFound error returned beside the resources that were read.
func TestInventoryNames(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("a", map[string]any{"size": int64(1)}), thing("z", nil))
	require.NoError(t, err)
	p.Put(&manifest.Resource{APIVersion: testAV, Kind: "Thing", Metadata: manifest.Metadata{Name: "u"}, Status: map[string]any{"ip": "u-ip"}})

	inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{Names: []string{"u", "nope", "a"}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.NotFound), "%v", err)
	assert.Contains(t, err.Error(), "nope")
	require.NotNil(t, inv)
	assert.Equal(t, []string{"u", "a"}, names(inv.Resources), "z is not asked for")
	assert.Equal(t, map[string]any{"ip": "u-ip"}, inv.Resources[0].Status)
	assert.Equal(t, map[string]any{"size": int64(1)}, inv.Resources[1].Spec)
	assert.Equal(t, []manifest.ID{thingID("a")}, mapKeys(inv.Records))
	assert.Zero(t, p.Calls().List, "names are read one by one, not listed")

	inv, err = e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{Names: []string{"nope"}})
	assert.True(t, errors.Is(err, errcode.NotFound), "%v", err)
	assert.Empty(t, inv.Resources)

	_, err = e.Inventory(ctx, "not-an-api-version", "Thing", openctl.InventoryOptions{})
	assert.True(t, errors.Is(err, errcode.Invalid), "%v", err)
}

func mapKeys(m map[manifest.ID]*state.Record) []manifest.ID {
	var out []manifest.ID
	for id := range m {
		out = append(out, id)
	}
	return out
}

// TestInventoryFromState: the records only, with the status of the last
// apply; no provider is contacted, and none need be registered.
func TestInventoryFromState(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("b", nil), thing("a", map[string]any{"size": int64(1)}))
	require.NoError(t, err)
	p.Put(thing("unrecorded", nil))
	p.Put(&manifest.Resource{APIVersion: testAV, Kind: "Thing", Metadata: manifest.Metadata{Name: "a"}, Status: map[string]any{"ip": "changed"}})
	before := p.Calls()

	inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{FromState: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names(inv.Resources))
	assert.Equal(t, map[string]any{"size": int64(1)}, inv.Resources[0].Spec)
	assert.Equal(t, map[string]any{"ip": "ip-of-a"}, inv.Resources[0].Status, "the status of the last apply, its secrets (token) left out")
	assert.Len(t, inv.Records, 2)
	assert.Empty(t, inv.Gone)

	inv, err = e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{FromState: true, Names: []string{"unrecorded", "b"}})
	assert.True(t, errors.Is(err, errcode.NotFound), "%v", err)
	assert.Contains(t, err.Error(), "Thing/unrecorded is not recorded in the state")
	assert.Equal(t, []string{"b"}, names(inv.Resources))
	assert.Equal(t, before, p.Calls(), "no provider call")

	// No provider at all: the state is enough.
	bare, err := openctl.New(openctl.WithStore(e.Store()))
	require.NoError(t, err)
	inv, err = bare.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{FromState: true, WithSecrets: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names(inv.Resources))
	_, err = bare.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{})
	assert.Error(t, err, "without FromState the provider is needed")
}

// gatedProvider counts the Gets in flight once armed (gate set): the
// first limit Gets wait for each other, so that they overlap for certain.
type gatedProvider struct {
	*testProvider
	limit                   int32
	gate                    chan struct{}
	entered, inflight, peak atomic.Int32
}

func (p *gatedProvider) arm(limit int) {
	p.limit, p.gate = int32(limit), make(chan struct{})
	p.entered.Store(0)
	p.peak.Store(0)
}

func (p *gatedProvider) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	if p.gate != nil {
		n := p.inflight.Add(1)
		defer p.inflight.Add(-1)
		for m := p.peak.Load(); n > m && !p.peak.CompareAndSwap(m, n); m = p.peak.Load() {
		}
		if p.entered.Add(1) == p.limit {
			close(p.gate)
		}
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return p.testProvider.Get(ctx, id)
}

// TestInventoryConcurrency: live reads run several at a time, up to
// Concurrency, or the engine's concurrency by default.
func TestInventoryConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name         string
		engine, opts int
		want         int
	}{
		{"option", 4, 2, 2},
		{"engine default", 3, 0, 3},
		{"one at a time", 4, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &gatedProvider{testProvider: newTestProvider()}
			e := newEngine(t, p, openctl.WithConcurrency(tc.engine))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a broken bound would block
			defer cancel()
			var rs []*manifest.Resource
			for i := range 8 {
				rs = append(rs, thing(fmt.Sprintf("t%d", i), nil))
			}
			_, err := e.Apply(ctx, rs...)
			require.NoError(t, err)

			p.arm(tc.want)
			inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{Concurrency: tc.opts})
			require.NoError(t, err)
			assert.Len(t, inv.Resources, 8)
			assert.Equal(t, int32(tc.want), p.peak.Load())
		})
	}
}

// fileStore opens a FileStore on dir, the store that keeps secrets sealed
// at rest; an empty passphrase is one that cannot be had.
func fileStore(t *testing.T, dir, passphrase string) *state.FileStore {
	t.Helper()
	st, err := state.OpenFile(dir, state.FileOptions{Passphrase: func() (secret.Secret, error) {
		if passphrase == "" {
			return secret.Secret{}, errors.New("test: no passphrase")
		}
		return secret.New(passphrase), nil
	}})
	require.NoError(t, err)
	return st
}

// TestInventoryWithSecrets: a secret spec field is left out of a record
// listed sealed, and reads [redacted] with WithSecrets — what applied
// again keeps the sealed value. A record that cannot be opened is left
// out, with its error, rather than shown without its secrets.
func TestInventoryWithSecrets(t *testing.T) {
	p := newTestProvider()
	dir := t.TempDir()
	e := newEngine(t, p, openctl.WithStore(fileStore(t, dir, "pass")))
	ctx := t.Context()
	auth := func() map[string]any {
		return map[string]any{"auth": map[string]any{"user": "app", "password": "hunter2"}}
	}
	_, err := e.Apply(ctx, thing("a", auth()), thing("b", auth()))
	require.NoError(t, err)

	for _, fromState := range []bool{false, true} {
		t.Run(fmt.Sprint("fromState=", fromState), func(t *testing.T) {
			inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{FromState: fromState})
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"auth": map[string]any{"user": "app"}}, inv.Resources[0].Spec, "sealed: left out")

			inv, err = e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{FromState: fromState, WithSecrets: true})
			require.NoError(t, err)
			require.Len(t, inv.Resources, 2)
			for _, r := range inv.Resources {
				assert.Equal(t, map[string]any{"auth": map[string]any{"user": "app", "password": secret.Redacted}}, r.Spec, r.Metadata.Name)
			}
			assert.Equal(t, "hunter2", inv.Records[thingID("a")].Secrets["spec.auth.password"].Reveal(), "the records are opened")
		})
	}

	// Printed then applied again: nothing changes.
	inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{WithSecrets: true})
	require.NoError(t, err)
	rep, err := e.Apply(ctx, inv.Resources[0])
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUnchanged))

	// Without the passphrase: listing works, opening does not.
	locked := newEngine(t, p, openctl.WithStore(fileStore(t, dir, "")))
	inv, err = locked.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{})
	require.NoError(t, err, "listing opens no record")
	assert.Equal(t, []string{"a", "b"}, names(inv.Resources))
	for _, opts := range []openctl.InventoryOptions{{WithSecrets: true}, {WithSecrets: true, Names: []string{"b"}}, {WithSecrets: true, FromState: true}} {
		inv, err := locked.Inventory(ctx, testAV, "Thing", opts)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no passphrase")
		assert.Empty(t, inv.Resources, "not shown, neither as recorded nor as listed live")
	}
}

// TestInventoryMemoryStore: the default store keeps secrets in clear, so
// listing it needs no passphrase and secret spec fields read [redacted]
// at once.
func TestInventoryMemoryStore(t *testing.T) {
	t.Setenv("OPENCTL_STATE_PASSPHRASE", "")
	t.Setenv("OPENCTL_STATE_PASSPHRASE_FILE", "")
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("a", map[string]any{"auth": map[string]any{"password": "hunter2"}}))
	require.NoError(t, err)
	for _, opts := range []openctl.InventoryOptions{{}, {FromState: true}, {WithSecrets: true}} {
		inv, err := e.Inventory(ctx, testAV, "Thing", opts)
		require.NoError(t, err)
		require.Len(t, inv.Resources, 1)
		assert.Equal(t, map[string]any{"auth": map[string]any{"password": secret.Redacted}}, inv.Resources[0].Spec)
	}
}

// TestRecords: records listed from a FileStore keep their secrets
// sealed (nil Secrets), with no passphrase; a store that cannot export
// them sealed, or a Memory, lists them whole.
func TestRecords(t *testing.T) {
	p := newTestProvider()
	dir := t.TempDir()
	st := fileStore(t, dir, "pass")
	e := newEngine(t, p, openctl.WithStore(st))
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("a", nil), &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{}})
	require.NoError(t, err)

	recs, err := newEngine(t, p, openctl.WithStore(fileStore(t, dir, ""))).Records(ctx, state.Filter{Kind: "Thing"})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, thingID("a"), recs[0].ID())
	assert.Nil(t, recs[0].Secrets)

	plain := struct{ state.Store }{st} // not a RawStore
	recs, err = newEngine(t, p, openctl.WithStore(plain)).Records(ctx, state.Filter{Kind: "Thing"})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "secret-of-a", recs[0].Secrets["status.token"].Reveal())
}

// TestRecordedResource: a recorded resource's secret spec fields come back
// as [redacted]; status secrets stay out; the record is not modified.
func TestRecordedResource(t *testing.T) {
	ctx := t.Context()
	mem := state.NewMemory()
	rec := &state.Record{
		APIVersion: testAV, Kind: "Thing", Name: "db",
		Labels: map[string]string{"app": "db"},
		Spec:   map[string]any{"auth": map[string]any{"user": "app"}},
		Status: map[string]any{"ip": "10.0.0.7"},
		Secrets: map[string]secret.Secret{
			"spec.auth.password": secret.New("hunter2"),
			"spec.key.private":   secret.New("k"), // a map the split left empty and removed
			"status.token":       secret.New("t"),
		},
	}
	bare := &state.Record{APIVersion: testAV, Kind: "Thing", Name: "x", Spec: map[string]any{"a": int64(1)}}
	for _, r := range []*state.Record{rec, bare} {
		_, err := mem.Put(ctx, r.Clone())
		require.NoError(t, err)
	}
	e, err := openctl.New(openctl.WithStore(mem))
	require.NoError(t, err)
	inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{FromState: true, Names: []string{"db", "x"}})
	require.NoError(t, err)
	require.Len(t, inv.Resources, 2)
	r := inv.Resources[0]
	assert.Equal(t, map[string]any{
		"auth": map[string]any{"user": "app", "password": secret.Redacted},
		"key":  map[string]any{"private": secret.Redacted},
	}, r.Spec)
	assert.Equal(t, map[string]any{"ip": "10.0.0.7"}, r.Status)
	assert.Equal(t, map[string]string{"app": "db"}, r.Metadata.Labels)
	assert.Equal(t, map[string]any{"user": "app"}, inv.Records[rec.ID()].Spec["auth"], "the record is not modified")
	assert.Equal(t, inv.Records[bare.ID()].Resource(), inv.Resources[1], "no secrets: the same as Resource")
}

// TestGet: a resource read live and from the state; a recorded one that
// is gone is not an error; one neither live nor recorded is NotFound; a
// name the state cannot hold is not looked up there.
func TestGet(t *testing.T) {
	p := newTestProvider()
	mem := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(mem))
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("a", map[string]any{"size": int64(1)}), thing("gone", nil))
	require.NoError(t, err)
	p.Remove(thingID("gone"))

	f, err := e.Get(ctx, thingID("a"))
	require.NoError(t, err)
	assert.False(t, f.Gone)
	require.NotNil(t, f.Record)
	assert.Equal(t, "secret-of-a", f.Record.Secrets["status.token"].Reveal(), "the record is read whole")
	assert.Equal(t, "secret-of-a", f.Resource.Status["token"], "the live resource as the provider reports it")

	f, err = e.Get(ctx, thingID("gone"))
	require.NoError(t, err)
	assert.True(t, f.Gone)
	want := f.Record.Resource()
	want.Status = nil
	assert.Equal(t, want, f.Resource, "a gone resource: as recorded, without status")

	_, err = e.Get(ctx, thingID("nope"))
	assert.True(t, errors.Is(err, errcode.NotFound), "%v", err)

	// A name that is not a valid manifest name (Proxmox allows upper case
	// in names) is never recorded: the state, which would refuse it, is
	// not asked.
	dotted := thingID("Ubuntu-24.04")
	p.Put(thing(dotted.Name, nil))
	strict := newEngine(t, p, openctl.WithStore(failGetStore{Memory: mem, fail: dotted}))
	f, err = strict.Get(ctx, dotted)
	require.NoError(t, err)
	assert.Nil(t, f.Record)
	assert.Equal(t, dotted.Name, f.Resource.Metadata.Name)
}

// ExampleEngine_Inventory lists the resources of a kind as openctl knows
// them: applied, created elsewhere, or applied but since deleted.
func ExampleEngine_Inventory() {
	ctx := context.Background()
	p := providertest.NewFake("demo", "Server")
	e, err := openctl.New(openctl.WithProviders(p))
	if err != nil {
		panic(err)
	}
	const av = "demo.openctl.io/v1"
	server := func(name string) *manifest.Resource {
		return &manifest.Resource{APIVersion: av, Kind: "Server", Metadata: manifest.Metadata{Name: name}, Spec: map[string]any{}}
	}
	if _, err := e.Apply(ctx, server("web-01"), server("web-02")); err != nil {
		panic(err)
	}
	p.Put(server("legacy"))                                               // created outside openctl
	p.Remove(manifest.ID{APIVersion: av, Kind: "Server", Name: "web-02"}) // deleted outside openctl

	inv, err := e.Inventory(ctx, av, "Server", openctl.InventoryOptions{})
	if err != nil {
		panic(err)
	}
	for _, r := range inv.Resources {
		_, recorded := inv.Records[r.ID()]
		fmt.Printf("%s recorded=%v\n", r.Metadata.Name, recorded)
	}
	for _, id := range inv.Gone {
		fmt.Println("gone:", id.Short())
	}
	// Output:
	// legacy recorded=false
	// web-01 recorded=true
	// web-02 recorded=true
	// gone: Server/web-02
}
