package openctl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// Tests of what the engine checks before the first change (the store's
// identity and keys, $ref targets and fields) and of what it promises
// around it: providers see the store's identity, plans hold no secret in
// clear, event times never go back, and messages name "openctl" once.

// identifiedStore is a Memory store with an identity (state.Identified).
type identifiedStore struct {
	*state.Memory
	id  string
	err error

	mu    sync.Mutex
	calls int
}

func (s *identifiedStore) StoreID(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.id, s.err
}

var _ state.Identified = (*identifiedStore)(nil)

// unlockingStore is a Memory store that can say whether it can seal and
// open secrets (the optional Unlock the engine looks for).
type unlockingStore struct {
	*state.Memory
	err error

	mu    sync.Mutex
	calls int
}

func (s *unlockingStore) Unlock(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.err
}

// ownerProvider records registry.Call.Owner of every Get, Apply, Delete and
// Diff call.
type ownerProvider struct {
	*testProvider

	mu     sync.Mutex
	owners map[string][]string // by method
}

func newOwnerProvider() *ownerProvider {
	return &ownerProvider{testProvider: newTestProvider(), owners: map[string][]string{}}
}

func (p *ownerProvider) note(ctx context.Context, method string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owners[method] = append(p.owners[method], registry.CallOf(ctx).Owner)
}

func (p *ownerProvider) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	p.note(ctx, "Get")
	return p.testProvider.Get(ctx, id)
}

func (p *ownerProvider) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	p.note(ctx, "Apply")
	return p.testProvider.Apply(ctx, r)
}

func (p *ownerProvider) Delete(ctx context.Context, id manifest.ID) error {
	p.note(ctx, "Delete")
	return p.testProvider.Delete(ctx, id)
}

func (p *ownerProvider) Diff(ctx context.Context, desired, live *manifest.Resource) (registry.Diff, error) {
	p.note(ctx, "Diff")
	return registry.Diff{Action: registry.DiffNone}, nil
}

func (p *ownerProvider) seen() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for k, v := range p.owners {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// TestOwnerReachesEveryProviderCall: with a store that has an identity,
// every Get (the $ref reads included), Apply, Diff and Delete of Apply,
// Plan and Delete sees it as registry.Call.Owner, read once per operation.
func TestOwnerReachesEveryProviderCall(t *testing.T) {
	ctx := t.Context()
	p := newOwnerProvider()
	st := &identifiedStore{Memory: state.NewMemory(), id: "store-a"}
	e := newEngine(t, p, openctl.WithStore(st))

	a, b := thing("a", nil), thing("b", map[string]any{"peer": ref("a", "status.ip")})
	_, err := e.Apply(ctx, a, b)
	require.NoError(t, err)
	_, err = e.Plan(ctx, a, b)
	require.NoError(t, err)
	_, err = e.Delete(ctx, thingID("b"), thingID("a"))
	require.NoError(t, err)

	seen := p.seen()
	for _, m := range []string{"Get", "Apply", "Diff", "Delete"} {
		require.NotEmpty(t, seen[m], "%s was called", m)
		for _, o := range seen[m] {
			assert.Equal(t, "store-a", o, "owner of a %s call", m)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	assert.Equal(t, 3, st.calls, "the identity is read once per operation")
}

// TestStoreIDFailureFailsBeforeWrites: a store that cannot say its
// identity fails Apply and Delete before any provider write.
func TestStoreIDFailureFailsBeforeWrites(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	p.Put(thing("old", nil))
	cause := errcode.New(errcode.Internal, "state: cannot write the store ID")
	st := &identifiedStore{Memory: state.NewMemory(), err: cause}
	e := newEngine(t, p, openctl.WithStore(st))

	_, err := e.Apply(ctx, thing("a", nil))
	require.Error(t, err)
	assert.ErrorIs(t, err, cause)
	_, err = e.Delete(ctx, thingID("old"))
	require.Error(t, err)
	assert.ErrorIs(t, err, cause)
	_, err = e.Plan(ctx, thing("a", nil))
	assert.ErrorIs(t, err, cause)
	assert.Zero(t, p.Calls().Writes())
}

// TestStoreThatCannotSealFailsApplyBeforeWrites (item 5): a resource of a
// kind with secret fields needs a store that can seal; a store whose
// Unlock fails (no or a wrong passphrase) fails the Apply before any
// provider write, with a *StateError.
func TestStoreThatCannotSealFailsApplyBeforeWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"missing passphrase", errcode.New(errcode.Invalid, "seal: no state passphrase: set OPENCTL_STATE_PASSPHRASE")},
		{"wrong passphrase", errcode.New(errcode.Unauthorized, "seal: wrong passphrase for the state key")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			p := newTestProvider()
			st := &unlockingStore{Memory: state.NewMemory(), err: tc.err}
			e := newEngine(t, p, openctl.WithStore(st))
			r := thing("db", map[string]any{"auth": map[string]any{"password": "hunter2"}})
			r.Source = manifest.Source{File: "sec.yaml", Line: 2}
			rep, err := e.Apply(ctx, thing("plain", nil), r)
			require.Error(t, err)
			assert.Nil(t, rep)
			assert.Zero(t, p.Calls().Writes(), "nothing is created before the store can record it")
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, errcode.Of(tc.err), errcode.Of(err))
			var se *openctl.StateError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "unlock", se.Op)

			_, err = e.Plan(ctx, r)
			assert.ErrorIs(t, err, tc.err, "Plan reads sealed records: it says so first")
		})
	}
}

// TestUnlockOnlyWhenSecretsMayBeSealed: kinds without secret fields never
// need the passphrase.
func TestUnlockOnlyWhenSecretsMayBeSealed(t *testing.T) {
	p := newTestProvider()
	st := &unlockingStore{Memory: state.NewMemory(), err: errcode.New(errcode.Invalid, "seal: no state passphrase")}
	e := newEngine(t, p, openctl.WithStore(st))
	_, err := e.Apply(t.Context(), &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": int64(0)}})
	require.NoError(t, err)
	assert.Zero(t, st.calls)
}

// TestRefToUnknownResourceFailsBeforeWrites (item 6): a $ref to a resource
// that is neither in the call nor live fails Plan and Apply before any
// write, as NotFound naming the target.
func TestRefToUnknownResourceFailsBeforeWrites(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p)
	a := thing("a", nil)
	b := thing("b", map[string]any{"peer": ref("ghost", "status.ip")})
	b.Source = manifest.Source{File: "b.yaml", Line: 4}

	_, err := e.Plan(ctx, a, b)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.NotFound))
	assert.Equal(t, "openctl: Thing/b (b.yaml:4): refs: Thing/b spec.peer: $ref to Thing/ghost field status.ip: the referenced resource does not exist: it is not among the resources given and its provider does not find it", err.Error())

	_, err = e.Apply(ctx, a, b)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.NotFound))
	assert.Contains(t, err.Error(), "Thing/ghost")
	assert.Zero(t, p.Calls().Writes(), "nothing is applied")

	// Once the target exists (made outside this call), both pass.
	p.Put(&manifest.Resource{APIVersion: testAV, Kind: "Thing", Metadata: manifest.Metadata{Name: "ghost"}, Status: map[string]any{"ip": "10.0.0.9"}})
	_, err = e.Plan(ctx, a, b)
	require.NoError(t, err)
	_, err = e.Apply(ctx, a, b)
	require.NoError(t, err)
}

// TestPlanOfRecordedSecretIsNoOpWithoutFields (item 9): re-planning a
// resource with a secret spec field is a no-op with no fields, and no
// value of a Plan holds the secret in clear, changed or not.
func TestPlanOfRecordedSecretIsNoOpWithoutFields(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p)
	r := thing("db", map[string]any{"auth": map[string]any{"user": "app", "password": "hunter2"}})
	_, err := e.Apply(ctx, r)
	require.NoError(t, err)

	plan, err := e.Plan(ctx, r)
	require.NoError(t, err)
	c, ok := plan.Change(thingID("db"))
	require.True(t, ok)
	assert.Equal(t, openctl.ActionNoOp, c.Action)
	assert.Empty(t, c.Fields)
	assert.False(t, plan.HasChanges())
	assertNoClearText(t, plan, "hunter2")

	// A changed password is a change, shown redacted.
	r2 := r.DeepCopy()
	r2.Spec["auth"].(map[string]any)["password"] = "rotated"
	plan, err = e.Plan(ctx, r2)
	require.NoError(t, err)
	c, _ = plan.Change(thingID("db"))
	assert.Equal(t, openctl.ActionUpdate, c.Action)
	require.Len(t, c.Fields, 1)
	assert.Equal(t, "spec.auth.password", c.Fields[0].Path)
	assertNoClearText(t, plan, "rotated", "hunter2")

	// A new block holding the secret is shown with the secret redacted.
	r3 := thing("db", map[string]any{"auth": map[string]any{"user": "app", "password": "hunter2"}, "more": map[string]any{"x": int64(1)}})
	delete(r3.Spec, "auth")
	_, err = e.Apply(ctx, r3)
	require.NoError(t, err)
	plan, err = e.Plan(ctx, r)
	require.NoError(t, err)
	c, _ = plan.Change(thingID("db"))
	assert.Equal(t, openctl.ActionUpdate, c.Action)
	assertNoClearText(t, plan, "hunter2")
}

// TestPlanRedactsSecretsOfDifferFields: a Differ's fields are redacted too.
func TestPlanRedactsSecretsOfDifferFields(t *testing.T) {
	ctx := t.Context()
	tp := newTestProvider()
	tp.diff = func(desired, live *manifest.Resource) registry.Diff {
		return registry.Diff{Action: registry.DiffUpdate, Fields: manifest.Diff("spec", map[string]any{}, desired.Spec)}
	}
	p := differProvider{tp}
	e := newEngine(t, p)
	r := thing("db", map[string]any{"auth": map[string]any{"password": "hunter2"}})
	_, err := e.Apply(ctx, r)
	require.NoError(t, err)
	plan, err := e.Plan(ctx, r)
	require.NoError(t, err)
	c, _ := plan.Change(thingID("db"))
	assert.Equal(t, openctl.ActionUpdate, c.Action)
	require.NotEmpty(t, c.Fields)
	assertNoClearText(t, plan, "hunter2")
}

// assertNoClearText fails if any of secrets can be read in plan's
// changes printed with %v, %+v, %#v or as JSON.
func assertNoClearText(t *testing.T, plan *openctl.Plan, secrets ...string) {
	t.Helper()
	js, err := json.Marshal(plan.Changes)
	require.NoError(t, err)
	for _, out := range []string{fmt.Sprintf("%v", plan.Changes), fmt.Sprintf("%+v", plan.Changes), fmt.Sprintf("%#v", plan.Changes), string(js)} {
		for _, s := range secrets {
			assert.NotContains(t, out, s)
		}
	}
}

// TestObserverTimesNeverDecrease (item 10): a burst of events from
// resources applied in parallel reaches the observer in time order.
func TestObserverTimesNeverDecrease(t *testing.T) {
	const resources, steps = 40, 4
	p := newTestProvider()
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		for i := range steps {
			registry.CallOf(ctx).ReportStep(fmt.Sprintf("step %d", i))
		}
		return nil
	}
	var log eventLog
	observe := func(ev openctl.Event) {
		// A little work per event keeps goroutines waiting for delivery.
		for range 20 {
			runtime.Gosched()
		}
		log.observe(ev)
	}
	e := newEngine(t, p, openctl.WithConcurrency(resources), openctl.WithObserver(observe))
	for round := range 5 {
		rs := make([]*manifest.Resource, resources)
		for i := range rs {
			rs[i] = thing(fmt.Sprintf("t%d-%02d", round, i), nil)
		}
		_, err := e.Apply(t.Context(), rs...)
		require.NoError(t, err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	require.GreaterOrEqual(t, len(log.events), 200)
	for i := 1; i < len(log.events); i++ {
		prev, cur := log.events[i-1], log.events[i]
		require.False(t, cur.Time.Before(prev.Time), "event %d (%s %s at %s) is earlier than the one before (%s %s at %s)",
			i, cur.Type, cur.ID.Short(), cur.Time.Format("15:04:05.000000"), prev.Type, prev.ID.Short(), prev.Time.Format("15:04:05.000000"))
	}
}

// TestErrorPrefixSaidOnce: an engine error wrapping another engine error
// says "openctl:" once.
func TestErrorPrefixSaidOnce(t *testing.T) {
	p := newTestProvider()
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error { panic("boom") }
	e := newEngine(t, p)
	r := thing("a", nil)
	r.Source = manifest.Source{File: "a.yaml", Line: 3}
	_, err := e.Apply(t.Context(), r)
	require.Error(t, err)
	assert.Equal(t, "openctl: apply Thing/a (a.yaml:3): provider panicked in apply: boom (INTERNAL)", err.Error())

	// A provider's own error that starts with "openctl:" is not prefixed again.
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		return errcode.New(errcode.Invalid, "openctl: the test provider is not configured")
	}
	_, err = e.Apply(t.Context(), r)
	require.Error(t, err)
	assert.Equal(t, "openctl: apply Thing/a (a.yaml:3): the test provider is not configured (INVALID_REQUEST)", err.Error())
	assert.True(t, errors.Is(err, errcode.Invalid))
}

// fieldsProvider declares the fields of its Thing kind.
type fieldsProvider struct{ *testProvider }

func (p fieldsProvider) Kinds() []registry.Kind {
	ks := p.testProvider.Kinds()
	ks[0].Fields = []string{"spec", "status.ip", "status.token"}
	return ks
}

// TestRefToFieldTheKindCannotHave (item 6): a $ref field outside what the
// target's kind declares is Invalid in Validate, Plan and Apply, before
// anything is applied; one inside passes.
func TestRefToFieldTheKindCannotHave(t *testing.T) {
	ctx := t.Context()
	p := fieldsProvider{newTestProvider()}
	e := newEngine(t, p)
	a := thing("a", nil)
	b := thing("b", map[string]any{"peer": ref("a", "status.address")})
	b.Source = manifest.Source{File: "b.yaml", Line: 7}

	want := "openctl: Thing/b (b.yaml:7): refs: Thing/b spec.peer: $ref to Thing/a field status.address: kind Thing has no field status.address (its fields: spec, status.ip, status.token)"
	err := e.Validate(ctx, a, b)
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid))
	assert.Equal(t, want, err.Error())
	_, err = e.Plan(ctx, a, b)
	assert.Equal(t, want, err.Error())
	_, err = e.Apply(ctx, a, b)
	assert.Equal(t, want, err.Error())
	assert.Zero(t, p.Calls().Writes())

	for _, field := range []string{"status.ip", "status", "spec.anything", "metadata.name", ""} {
		ok := thing("b", map[string]any{"peer": ref("a", field)})
		assert.NoError(t, e.Validate(ctx, a, ok), "field %q", field)
	}
}
