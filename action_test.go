package openctl_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// rotatingProvider offers "rotate" on a Thing: it replaces the thing's
// live status.token and records the change; with records off it does not
// ask for the state lock and cannot record.
type rotatingProvider struct {
	*testProvider
	records bool
	during  func(ctx context.Context) // called inside Do, under the lock when records is on
}

func (p *rotatingProvider) Actions() []registry.ActionSpec {
	return []registry.ActionSpec{{Name: "rotate", Kind: "Thing", Short: "rotate the token", Records: p.records}}
}

func (p *rotatingProvider) Do(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	live, err := p.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	live.Status["token"] = "rotated"
	p.Put(live)
	registry.CallOf(ctx).ReportStep("token replaced")
	if p.during != nil {
		p.during(ctx)
	}
	if req.Record == nil {
		return &registry.ActionResult{Message: "not recorded"}, nil
	}
	return &registry.ActionResult{Message: "rotated"}, req.Record(ctx, registry.StatusUpdate{ID: req.ID, Status: map[string]any{"token": "rotated"}})
}

func TestActionRecordsStatusAndKeepsDependentsUnchanged(t *testing.T) {
	ctx := t.Context()
	p := &rotatingProvider{testProvider: newTestProvider(), records: true}
	st := state.NewMemory()
	var events eventLog
	e := newEngine(t, p, openctl.WithStore(st), openctl.WithObserver(events.observe))
	a, b := thing("a", nil), thing("b", map[string]any{"peerToken": ref("a", "status.token")})
	_, err := e.Apply(ctx, a, b)
	require.NoError(t, err)

	p.during = func(ctx context.Context) {
		other := newEngine(t, p, openctl.WithStore(st), openctl.WithLockWait(0))
		_, err := other.Apply(ctx, thing("c", nil))
		assert.ErrorContains(t, err, "lock", "an action that records holds the state lock")
	}
	res, err := e.Do(ctx, thingID("a"), "rotate", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "rotated", res.Message)

	rec, err := st.Get(ctx, thingID("a"))
	require.NoError(t, err)
	assert.Equal(t, "rotated", rec.Revealed().Status["token"])
	assert.NotContains(t, rec.Status, "token", "a secret status field is sealed, not kept in clear")
	assert.Equal(t, "ip-of-a", rec.Status["ip"], "fields the action did not name stay")

	// b takes a's token through a $ref: its recorded spec hash follows the
	// rotation, so the next plan sees nothing to do...
	plan, err := e.Plan(ctx, a, b)
	require.NoError(t, err)
	for _, c := range plan.Changes {
		assert.Equal(t, openctl.ActionNoOp, c.Action, "%s after a recorded rotation", c.ID.Short())
	}
	var steps []string
	for _, ev := range events.events {
		if ev.Type == openctl.EventStep && ev.Op == "rotate" {
			steps = append(steps, ev.Step)
		}
	}
	assert.Equal(t, []string{"token replaced"}, steps, "an action's steps reach the observer")
}

func TestActionWithoutRecordsChangesNoRecord(t *testing.T) {
	ctx := t.Context()
	p := &rotatingProvider{testProvider: newTestProvider()}
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))
	a, b := thing("a", nil), thing("b", map[string]any{"peerToken": ref("a", "status.token")})
	_, err := e.Apply(ctx, a, b)
	require.NoError(t, err)
	res, err := e.Do(ctx, thingID("a"), "rotate", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "not recorded", res.Message)
	rec, err := st.Get(ctx, thingID("a"))
	require.NoError(t, err)
	assert.Equal(t, "secret-of-a", rec.Revealed().Status["token"])
	// ...whereas a change nobody recorded is one: b takes the new token.
	plan, err := e.Plan(ctx, a, b)
	require.NoError(t, err)
	actions := map[string]openctl.Action{}
	for _, c := range plan.Changes {
		actions[c.ID.Name] = c.Action
	}
	assert.Equal(t, map[string]openctl.Action{"a": openctl.ActionNoOp, "b": openctl.ActionUpdate}, actions)
}

var _ registry.Actioner = (*rotatingProvider)(nil)

// resizingProvider offers "resize" on a Thing: it changes what the
// manifest describes (spec.size) and records it as the spec.
type resizingProvider struct{ *testProvider }

func (p *resizingProvider) Actions() []registry.ActionSpec {
	return []registry.ActionSpec{{Name: "resize", Kind: "Thing", Short: "resize it", Records: true}}
}

func (p *resizingProvider) Do(ctx context.Context, req registry.ActionRequest) (*registry.ActionResult, error) {
	return &registry.ActionResult{Message: "resized"}, req.Record(ctx, registry.StatusUpdate{ID: req.ID, Status: map[string]any{"size": int64(2)}, Spec: map[string]any{"spec.size": int64(2)}})
}

// An action that changes what the manifest describes records it as the
// spec: once the manifest says the same, plan has nothing to do; the old
// manifest is now a change.
func TestActionRecordsSpec(t *testing.T) {
	ctx := t.Context()
	p := &resizingProvider{testProvider: newTestProvider()}
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))
	_, err := e.Apply(ctx, thing("a", map[string]any{"size": int64(1), "name": "kept"}))
	require.NoError(t, err)
	_, err = e.Do(ctx, thingID("a"), "resize", nil, nil)
	require.NoError(t, err)

	rec, err := st.Get(ctx, thingID("a"))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"size": int64(2), "name": "kept"}, rec.Spec, "the named field set, the others kept")
	plan, err := e.Plan(ctx, thing("a", map[string]any{"size": int64(2), "name": "kept"}))
	require.NoError(t, err)
	assert.Equal(t, openctl.ActionNoOp, plan.Changes[0].Action, "%v", plan.Changes[0].Reasons)
	plan, err = e.Plan(ctx, thing("a", map[string]any{"size": int64(1), "name": "kept"}))
	require.NoError(t, err)
	assert.Equal(t, openctl.ActionUpdate, plan.Changes[0].Action)
}
