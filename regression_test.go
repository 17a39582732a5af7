package openctl_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// nestedProvider adds a Super composite that plans Groups (which plan Things).
type nestedProvider struct{ *testProvider }

func (p nestedProvider) Kinds() []registry.Kind {
	return append(p.testProvider.Kinds(), registry.Kind{Kind: "Super", Composite: true})
}

func (p nestedProvider) Plan(ctx context.Context, r *manifest.Resource) ([]*manifest.Resource, error) {
	if r.Kind != "Super" {
		return p.testProvider.Plan(ctx, r)
	}
	n, _ := r.Spec["count"].(int64)
	var out []*manifest.Resource
	for i := range n {
		out = append(out, &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: fmt.Sprintf("%s-%d", r.Metadata.Name, i)}, Spec: map[string]any{"count": int64(2)}})
	}
	return out, nil
}

func TestDeleteRefusedChildDeletesNothingBelowIt(t *testing.T) {
	ctx := t.Context()
	p := nestedProvider{newTestProvider()}
	e := newEngine(t, p)
	sup := &manifest.Resource{APIVersion: testAV, Kind: "Super", Metadata: manifest.Metadata{Name: "s"}, Spec: map[string]any{"count": int64(1)}}
	_, err := e.Apply(ctx, sup)
	require.NoError(t, err)
	before := len(p.Log())
	_, err = e.Delete(ctx, manifest.ID{APIVersion: testAV, Kind: "Group", Name: "s-0"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "belongs to Super/s")
	assert.Empty(t, p.Log()[before:], "a refused delete must not delete anything")
	_, err = p.Get(ctx, thingID("s-0-0"))
	assert.NoError(t, err, "grandchild of refused node should survive")
}

func TestPruneSparesAdoptedChild(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))
	group := &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": int64(2)}}
	_, err := e.Apply(ctx, group)
	require.NoError(t, err)
	// The user takes g-1 over as a top-level resource (separate call).
	_, err = e.Apply(ctx, thing("g-1", map[string]any{"mine": true}))
	require.NoError(t, err)
	rec, err := st.Get(ctx, thingID("g-1"))
	require.NoError(t, err)
	require.Nil(t, rec.Owner, "state now says g-1 has no owner")
	// Scale the group down: g-1 is no longer the group's, yet it is pruned.
	group.Spec["count"] = int64(1)
	_, err = e.Apply(ctx, group)
	require.NoError(t, err)
	_, err = p.Get(ctx, thingID("g-1"))
	assert.NoError(t, err, "g-1 was taken over as a top-level resource: the group's prune leaves it alone")
}

type cancelAfterApply struct {
	*testProvider
	cancel context.CancelFunc
}

func (p cancelAfterApply) Apply(ctx context.Context, r *manifest.Resource) (*manifest.Resource, error) {
	out, err := p.testProvider.Apply(ctx, r)
	p.cancel() // e.g. user hits ^C just as the VM finished creating
	return out, err
}

func TestCancelAfterProviderWriteKeepsRecord(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := cancelAfterApply{newTestProvider(), cancel}
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))
	_, err := e.Apply(ctx, thing("a", nil))
	require.NoError(t, err, "the provider finished; cancelling afterwards loses nothing")
	rec, err := st.Get(t.Context(), thingID("a"))
	require.NoError(t, err, "state records a resource the provider created, even after ^C")
	assert.NotEmpty(t, rec.SpecHash)
}

func TestCancelDuringRetryIsVisible(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := newTestProvider()
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		return fmt.Errorf("boom: %w", errcode.Transient)
	}
	// ^C during the first (hour-long) wait between attempts.
	e := newEngine(t, p, openctl.WithRetry(backoff.Policy{Initial: time.Hour, Max: time.Hour, MaxAttempts: 5}),
		openctl.WithObserver(func(ev openctl.Event) {
			if ev.Type == openctl.EventRetrying {
				cancel()
			}
		}))
	_, err := e.Apply(ctx, thing("a", nil))
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "cancellation is in the error chain: %v", err)
	assert.NotEqual(t, errcode.Transient, errcode.Of(err), "a cancelled apply does not invite a retry")
	assert.Contains(t, err.Error(), "last attempt: boom")
}

type nilChildProvider struct{ *testProvider }

func (p nilChildProvider) Plan(ctx context.Context, r *manifest.Resource) ([]*manifest.Resource, error) {
	return []*manifest.Resource{nil}, nil
}

func TestDeleteNilChildIsAnError(t *testing.T) {
	ctx := t.Context()
	p := nilChildProvider{newTestProvider()}
	e := newEngine(t, p)
	p.Put(&manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}})
	var err error
	assert.NotPanics(t, func() {
		_, err = e.Delete(ctx, manifest.ID{APIVersion: testAV, Kind: "Group", Name: "g"})
	})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Internal))
	assert.Contains(t, err.Error(), "nil child")
}

func TestUnknownGroupInRefFailsBeforeWrites(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p)
	bad := map[string]any{"$ref": map[string]any{"apiVersion": "nope.openctl.io/v1", "kind": "Foo", "name": "x"}}
	_, err := e.Apply(ctx, thing("a", nil), thing("b", map[string]any{"x": bad}))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), `no provider serves apiVersion group "nope.openctl.io"`)
	assert.Zero(t, p.Calls().Writes(), "bad input fails before any write")
}

func TestObserverPanicIsContained(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithObserver(func(openctl.Event) { panic("observer bug") }))
	_, err := e.Apply(t.Context(), thing("a", nil), thing("b", nil))
	require.NoError(t, err)
	assert.Equal(t, 2, p.Calls().Apply)
}

func TestProviderPanicWithErrorKeepsCause(t *testing.T) {
	cause := errors.New("index out of range")
	p := newTestProvider()
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error { panic(cause) }
	e := newEngine(t, p)
	_, err := e.Apply(t.Context(), thing("a", nil))
	require.Error(t, err)
	assert.True(t, errors.Is(err, cause))
	assert.Equal(t, errcode.Internal, errcode.Of(err))
}

// TestSpecSecretFieldsAreSealedNotRecorded: a spec field the kind declares
// secret never reaches the recorded spec; it is kept with the sealed
// secrets, a re-apply is still a no-op, and a change of it is still seen.
func TestSpecSecretFieldsAreSealedNotRecorded(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	r := thing("db", map[string]any{"auth": map[string]any{"user": "app", "password": "hunter2"}, "peer": nil})
	delete(r.Spec, "peer")
	_, err := e.Apply(ctx, r)
	require.NoError(t, err)
	rec, err := e.Store().Get(ctx, thingID("db"))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"auth": map[string]any{"user": "app"}}, rec.Spec)
	assert.Equal(t, "hunter2", rec.Secrets["spec.auth.password"].Reveal())
	assert.Equal(t, "hunter2", r.Spec["auth"].(map[string]any)["password"], "the caller's manifest is untouched")

	rep, err := e.Apply(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUnchanged))

	r2 := r.DeepCopy()
	r2.Spec["auth"].(map[string]any)["password"] = "rotated"
	rep, err = e.Apply(ctx, r2)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUpdated))
	rec, err = e.Store().Get(ctx, thingID("db"))
	require.NoError(t, err)
	assert.Equal(t, "rotated", rec.Secrets["spec.auth.password"].Reveal())

	// A $ref in a secret field names where the value comes from: it stays.
	_, err = e.Apply(ctx, thing("src", nil))
	require.NoError(t, err)
	_, err = e.Apply(ctx, thing("app", map[string]any{"auth": map[string]any{"password": ref("src", "status.ip")}}))
	require.NoError(t, err)
	rec, err = e.Store().Get(ctx, thingID("app"))
	require.NoError(t, err)
	_, kept := rec.Spec["auth"].(map[string]any)["password"]
	assert.True(t, kept)
}

// TestRedactedSpecSecretKeepsTheSealedValue: "[redacted]" in a secret spec
// field — what `openctl get -o yaml` prints — means "keep the sealed
// value": re-applying it is a no-op, and without a sealed value it is
// refused rather than stored as the password.
func TestRedactedSpecSecretKeepsTheSealedValue(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("db", map[string]any{"auth": map[string]any{"password": "hunter2"}}))
	require.NoError(t, err)
	printed := thing("db", map[string]any{"auth": map[string]any{"password": "[redacted]"}})
	rep, err := e.Apply(ctx, printed)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Count(openctl.OutcomeUnchanged))
	plan, err := e.Plan(ctx, printed)
	require.NoError(t, err)
	assert.Equal(t, openctl.ActionNoOp, plan.Changes[0].Action, "%v %v", plan.Changes[0].Reasons, plan.Changes[0].Fields)

	_, err = e.Apply(ctx, thing("fresh", map[string]any{"auth": map[string]any{"password": "[redacted]"}}))
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Contains(t, err.Error(), "spec.auth.password")
}

// TestDeleteOfAbsentResourceIsUnchanged: deleting what does not exist is
// not an error, and is not reported as deleted either.
func TestDeleteOfAbsentResourceIsUnchanged(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p)
	ctx := t.Context()
	_, err := e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	rep, err := e.Delete(ctx, thingID("a"), thingID("never"))
	require.NoError(t, err)
	a, _ := rep.Result(thingID("a"))
	never, _ := rep.Result(thingID("never"))
	assert.Equal(t, openctl.OutcomeDeleted, a.Outcome)
	assert.Equal(t, openctl.OutcomeUnchanged, never.Outcome)
	_, err = e.Store().Get(ctx, thingID("a"))
	assert.True(t, errcode.Is(err, errcode.NotFound))
}
