package openctl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

func TestApplyRefsFlowAndNoOp(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))

	db := thing("db", map[string]any{"size": int64(10)})
	web := thing("web", map[string]any{"dbIP": ref("db", "status.ip"), "nested": []any{map[string]any{"whole": ref("db", "")}}})
	rep, err := e.Apply(ctx, web, db)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	assert.Equal(t, thingID("db"), rep.Results[0].ID, "dependency first in execution order")
	assert.Equal(t, openctl.OutcomeCreated, rep.Results[0].Outcome)
	assert.Equal(t, openctl.OutcomeCreated, rep.Results[1].Outcome)

	live, err := p.Get(ctx, thingID("web"))
	require.NoError(t, err)
	assert.Equal(t, "ip-of-db", live.Spec["dbIP"], "the provider saw the resolved value")
	whole := live.Spec["nested"].([]any)[0].(map[string]any)["whole"].(map[string]any)
	assert.Equal(t, "db", whole["metadata"].(map[string]any)["name"])
	_, stillMarker := web.Spec["dbIP"].(map[string]any)
	assert.True(t, stillMarker, "the caller's manifest is not modified")

	rec, err := st.Get(ctx, thingID("web"))
	require.NoError(t, err)
	assert.Equal(t, ref("db", "status.ip"), rec.Spec["dbIP"], "state keeps the spec as written")
	assert.NotContains(t, rec.Status, "token", "secret fields are not kept in the status")
	assert.Equal(t, "secret-of-web", rec.Secrets["status.token"].Reveal())
	assert.NotContains(t, fmt.Sprintf("%v", rec), "secret-of-web", "a record never prints its secrets")

	writes := p.Calls().Writes()
	rep, err = e.Apply(ctx, db, web)
	require.NoError(t, err)
	assert.Equal(t, writes, p.Calls().Writes(), "a second apply of unchanged manifests makes no provider writes")
	assert.Equal(t, 2, rep.Count(openctl.OutcomeUnchanged))

	// A changed value in a dependency flows into the dependent.
	p.StatusFunc = func(r *manifest.Resource) map[string]any {
		return map[string]any{"ip": "new-ip-of-" + r.Metadata.Name}
	}
	db.Spec["size"] = int64(20)
	rep, err = e.Apply(ctx, db, web)
	require.NoError(t, err)
	assert.Equal(t, openctl.OutcomeUpdated, rep.Results[0].Outcome)
	assert.Equal(t, openctl.OutcomeUpdated, rep.Results[1].Outcome, "web's resolved spec changed")
	live, err = p.Get(ctx, thingID("web"))
	require.NoError(t, err)
	assert.Equal(t, "new-ip-of-db", live.Spec["dbIP"])
}

func TestApplyRecreatesDriftedResource(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p)
	_, err := e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	p.Remove(thingID("a"))
	rep, err := e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
	assert.Equal(t, openctl.OutcomeCreated, rep.Results[0].Outcome)
	_, err = p.Get(ctx, thingID("a"))
	assert.NoError(t, err)
}

func TestApplyParallelWithinBound(t *testing.T) {
	p := newTestProvider()
	var inFlight, peak atomic.Int32
	// The first applies hold until three are in flight, then all return
	// at once: the peak is reached by design, not by timing, and an
	// engine above its bound would go past it.
	full := make(chan struct{})
	var fill sync.Once
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		if n >= 3 {
			fill.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-ctx.Done():
		}
		return nil
	}
	e := newEngine(t, p, openctl.WithConcurrency(3))
	var rs []*manifest.Resource
	for i := range 12 {
		rs = append(rs, thing(fmt.Sprintf("t%d", i), nil))
	}
	_, err := e.Apply(t.Context(), rs...)
	require.NoError(t, err)
	assert.Equal(t, int32(3), peak.Load(), "independent resources run in parallel, never above the bound")
}

func TestApplyFailureSkipsOnlyDependents(t *testing.T) {
	p := newTestProvider()
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		if r.Metadata.Name == "bad" {
			return fmt.Errorf("boom: %w", errcode.Invalid)
		}
		return nil
	}
	log := &eventLog{}
	e := newEngine(t, p, openctl.WithObserver(log.observe))
	rep, err := e.Apply(t.Context(),
		thing("bad", nil),
		thing("child", map[string]any{"x": ref("bad", "status.ip")}),
		thing("grandchild", map[string]any{"x": ref("child", "status.ip")}),
		thing("independent", nil),
	)
	require.Error(t, err)
	require.Len(t, rep.Results, 4)
	byName := map[string]openctl.Result{}
	for _, r := range rep.Results {
		byName[r.ID.Name] = r
	}
	assert.Equal(t, openctl.OutcomeFailed, byName["bad"].Outcome)
	assert.True(t, errors.Is(byName["bad"].Err, errcode.Invalid))
	assert.Equal(t, 1, byName["bad"].Attempts, "an Invalid error is never retried")
	assert.Equal(t, openctl.OutcomeSkipped, byName["child"].Outcome)
	assert.Equal(t, openctl.OutcomeSkipped, byName["grandchild"].Outcome)
	assert.Contains(t, byName["grandchild"].Err.Error(), "Thing/bad failed", "names the root cause")
	var se *openctl.SkippedError
	require.ErrorAs(t, byName["child"].Err, &se)
	assert.Equal(t, thingID("bad"), se.Cause)
	assert.Equal(t, openctl.OutcomeCreated, byName["independent"].Outcome)

	assert.Equal(t, []openctl.EventType{openctl.EventStarted, openctl.EventFailed}, log.of(thingID("bad")))
	assert.Equal(t, []openctl.EventType{openctl.EventSkipped}, log.of(thingID("grandchild")))
	assert.Equal(t, []openctl.EventType{openctl.EventStarted, openctl.EventSucceeded}, log.of(thingID("independent")))
}

func TestApplyRetriesTransient(t *testing.T) {
	p := newTestProvider()
	var calls atomic.Int32
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		if calls.Add(1) < 3 {
			return fmt.Errorf("proxmox: can't lock file: %w", errcode.Transient)
		}
		return nil
	}
	log := &eventLog{}
	e := newEngine(t, p, openctl.WithObserver(log.observe))
	rep, err := e.Apply(t.Context(), thing("a", nil))
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Results[0].Attempts)
	assert.Equal(t, []openctl.EventType{openctl.EventStarted, openctl.EventRetrying, openctl.EventRetrying, openctl.EventSucceeded}, log.of(thingID("a")))

	// Attempts run out.
	calls.Store(-100)
	e = newEngine(t, p, openctl.WithRetry(backoff.Policy{MaxAttempts: 2, Initial: time.Millisecond}))
	rep, err = e.Apply(t.Context(), thing("b", nil))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Transient))
	assert.Equal(t, 2, rep.Results[0].Attempts)
}

func TestApplyProviderPanicIsInternal(t *testing.T) {
	p := newTestProvider()
	p.ApplyHook = func(ctx context.Context, r *manifest.Resource) error {
		if r.Metadata.Name == "explodes" {
			panic("nil map write")
		}
		return nil
	}
	e := newEngine(t, p)
	rep, err := e.Apply(t.Context(), thing("explodes", nil), thing("fine", nil))
	require.Error(t, err)
	res, ok := rep.Result(thingID("explodes"))
	require.True(t, ok)
	assert.Equal(t, openctl.OutcomeFailed, res.Outcome)
	assert.Equal(t, errcode.Internal, errcode.Of(res.Err))
	assert.Contains(t, res.Err.Error(), "provider panicked in apply: nil map write")
	res, _ = rep.Result(thingID("fine"))
	assert.Equal(t, openctl.OutcomeCreated, res.Outcome)
}

func TestApplyRejectsBadInputBeforeAnyWrite(t *testing.T) {
	aw := func(name string) *manifest.Resource {
		r := thing(name, nil)
		r.APIVersion = "aws.openctl.io/v1"
		return r
	}
	for _, tc := range []struct {
		name      string
		resources []*manifest.Resource
		want      []string
	}{
		{"unknown group lists registered ones", []*manifest.Resource{thing("ok", nil), aw("x")},
			[]string{`no provider serves apiVersion group "aws.openctl.io"`, "registered: test.openctl.io"}},
		{"ref missing name", []*manifest.Resource{thing("a", map[string]any{"x": map[string]any{"$ref": map[string]any{"apiVersion": testAV, "kind": "Thing"}}})},
			[]string{"Thing/a", "spec.x", "name"}},
		{"cycle across three names all three", []*manifest.Resource{
			thing("a", map[string]any{"x": ref("c", "status.ip")}),
			thing("b", map[string]any{"x": ref("a", "status.ip")}),
			thing("c", map[string]any{"x": ref("b", "status.ip")}),
		}, []string{"cycle", "Thing/a", "Thing/b", "Thing/c"}},
		{"duplicate resource", []*manifest.Resource{thing("a", nil), thing("a", map[string]any{"k": "v"})},
			[]string{"duplicate resource Thing/a"}},
		{"self reference", []*manifest.Resource{thing("a", map[string]any{"x": ref("a", "status.ip")})},
			[]string{"itself"}},
		{"bad name", []*manifest.Resource{thing("Not_Valid", nil)}, []string{"DNS-1123"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestProvider()
			e := newEngine(t, p)
			rep, err := e.Apply(t.Context(), tc.resources...)
			require.Error(t, err)
			assert.Nil(t, rep)
			assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Zero(t, p.Calls().Writes(), "nothing is applied when the input is invalid")
		})
	}
}

func TestApplyDuplicateNamesSources(t *testing.T) {
	docs := "apiVersion: test.openctl.io/v1\nkind: Thing\nmetadata:\n  name: a\n---\napiVersion: test.openctl.io/v1\nkind: Thing\nmetadata:\n  name: a\n"
	rs, err := manifest.DecodeBytes([]byte(docs), "dup.yaml")
	if err != nil {
		// Decoding may already reject the duplicate; it must name both places.
		assert.Contains(t, err.Error(), "dup.yaml:6")
		return
	}
	e := newEngine(t, newTestProvider())
	_, err = e.Apply(t.Context(), rs...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dup.yaml:6")
	assert.Contains(t, err.Error(), "dup.yaml:1")
}

func TestCompositeApplyAndDelete(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))
	group := &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": int64(3)}}

	rep, err := e.Apply(ctx, group)
	require.NoError(t, err)
	require.Len(t, rep.Results, 4, "the group and its three children each get a result")
	assert.Equal(t, "g-0", rep.Results[0].ID.Name, "the child the others refer to goes first")
	assert.Equal(t, "Group", rep.Results[3].ID.Kind, "the owner goes after its children")
	gid := manifest.ID{APIVersion: testAV, Kind: "Group", Name: "g"}
	for _, r := range rep.Results[:3] {
		require.NotNil(t, r.Owner)
		assert.Equal(t, gid, *r.Owner)
		live, err := p.Get(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, "Group", live.Metadata.Labels[manifest.LabelOwnerKind])
		assert.Equal(t, "g", live.Metadata.Labels[manifest.LabelOwnerName])
	}
	live, err := p.Get(ctx, thingID("g-2"))
	require.NoError(t, err)
	assert.Equal(t, "ip-of-g-0", live.Spec["peer"])
	rec, err := st.Get(ctx, gid)
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{thingID("g-0"), thingID("g-1"), thingID("g-2")}, rec.Children)

	// Deleting an owned child directly is refused, naming the owner.
	rep, err = e.Delete(ctx, thingID("g-1"))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), "belongs to Group/g")
	_, err = p.Get(ctx, thingID("g-1"))
	require.NoError(t, err, "the refused child still exists")
	assert.Equal(t, openctl.OutcomeFailed, rep.Results[0].Outcome)

	// Deleting the owner deletes the children first, dependents before
	// what they refer to.
	before := len(p.Log())
	rep, err = e.Delete(ctx, gid)
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Count(openctl.OutcomeDeleted))
	deletes := p.Log()[before:]
	require.Len(t, deletes, 4)
	assert.Equal(t, "delete Group/g", deletes[3])
	assert.Equal(t, "delete Thing/g-0", deletes[2], "g-0 is referred to by g-1 and g-2, so it goes after them")
	left, err := st.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Empty(t, left)
}

func TestDeleteReverseDependencyOrder(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithConcurrency(8))
	_, err := e.Apply(ctx,
		thing("base", nil),
		thing("mid", map[string]any{"x": ref("base", "status.ip")}),
		thing("top", map[string]any{"x": ref("mid", "status.ip")}),
	)
	require.NoError(t, err)
	before := len(p.Log())
	_, err = e.Delete(ctx, thingID("base"), thingID("mid"), thingID("top"), thingID("never-existed"))
	require.NoError(t, err)
	assert.Equal(t, []string{"delete Thing/top", "delete Thing/mid", "delete Thing/base"}, filterOut(p.Log()[before:], "never-existed"))
}

func filterOut(ss []string, sub string) []string {
	var out []string
	for _, s := range ss {
		if !strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

func TestPlan(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p)
	a := thing("a", map[string]any{"size": int64(1)})
	b := thing("b", map[string]any{"x": ref("a", "status.ip")})
	c := thing("c", nil)

	plan, err := e.Plan(ctx, a, b, c)
	require.NoError(t, err)
	assert.True(t, plan.HasChanges())
	for _, ch := range plan.Changes {
		assert.Equal(t, openctl.ActionCreate, ch.Action, ch.ID.Short())
	}
	assert.Equal(t, [][]manifest.ID{{thingID("a"), thingID("c")}, {thingID("b")}}, plan.Waves)
	assert.Zero(t, p.Calls().Writes(), "plan never writes")
	dot := plan.DOT()
	assert.Contains(t, dot, "digraph")
	assert.Contains(t, dot, "Thing/b")
	assert.Contains(t, dot, "(create)")

	_, err = e.Apply(ctx, a, b, c)
	require.NoError(t, err)
	plan, err = e.Plan(ctx, a, b, c)
	require.NoError(t, err)
	assert.False(t, plan.HasChanges(), "%+v", plan.Changes)

	a.Spec["size"] = int64(2)
	plan, err = e.Plan(ctx, a, b, c)
	require.NoError(t, err)
	ch, _ := plan.Change(thingID("a"))
	assert.Equal(t, openctl.ActionUpdate, ch.Action)
	require.Len(t, ch.Fields, 1)
	assert.Equal(t, "spec.size", ch.Fields[0].Path)
	assert.Equal(t, int64(1), ch.Fields[0].Old)
	assert.Equal(t, int64(2), ch.Fields[0].New)
	ch, _ = plan.Change(thingID("b"))
	assert.Equal(t, openctl.ActionUpdate, ch.Action, "b depends on a, which changes")
	assert.Contains(t, ch.Reasons[0], "known only after apply")
	ch, _ = plan.Change(thingID("c"))
	assert.Equal(t, openctl.ActionNoOp, ch.Action)
}

func TestPlanReplaceFromDiffer(t *testing.T) {
	ctx := t.Context()
	tp := newTestProvider()
	tp.diff = func(desired, live *manifest.Resource) registry.Diff {
		if desired.Spec["template"] != live.Spec["template"] {
			return registry.Diff{Action: registry.DiffReplace, Reasons: []string{"template changed: needs a new VM"}}
		}
		return registry.Diff{Action: registry.DiffNone}
	}
	e := newEngine(t, differProvider{tp})
	vm := thing("vm", map[string]any{"template": "debian"})
	_, err := e.Apply(ctx, vm)
	require.NoError(t, err)
	vm.Spec["template"] = "ubuntu"
	plan, err := e.Plan(ctx, vm)
	require.NoError(t, err)
	ch, _ := plan.Change(thingID("vm"))
	assert.Equal(t, openctl.ActionReplace, ch.Action)
	assert.Equal(t, []string{"template changed: needs a new VM"}, ch.Reasons)
}

// flakyDiffer fails its first Diff with a transient error.
type flakyDiffer struct {
	differProvider
	calls *atomic.Int32
}

func (p flakyDiffer) Diff(ctx context.Context, desired, live *manifest.Resource) (registry.Diff, error) {
	if p.calls.Add(1) == 1 {
		return registry.Diff{}, errcode.New(errcode.Transient, "test: 500 read the config")
	}
	return p.differProvider.Diff(ctx, desired, live)
}

// TestPlanRetriesTransientDiff: Plan retries a Differ's transient failure
// as it retries Get, instead of failing the plan.
func TestPlanRetriesTransientDiff(t *testing.T) {
	tp := newTestProvider()
	tp.diff = func(desired, live *manifest.Resource) registry.Diff { return registry.Diff{Action: registry.DiffNone} }
	calls := &atomic.Int32{}
	e := newEngine(t, flakyDiffer{differProvider{tp}, calls})
	vm := thing("vm", nil)
	_, err := e.Apply(t.Context(), vm)
	require.NoError(t, err)
	calls.Store(0)
	plan, err := e.Plan(t.Context(), vm)
	require.NoError(t, err)
	assert.False(t, plan.HasChanges())
	assert.Equal(t, int32(2), calls.Load())
}

func TestApplyLockHeld(t *testing.T) {
	ctx := t.Context()
	st := state.NewMemory()
	unlock, err := st.Lock(ctx, state.DefaultScope, state.LockInfo{Who: "ci-runner-3", Host: "h", PID: 42, Operation: "apply", Created: time.Now()})
	require.NoError(t, err)
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithStore(st))
	_, err = e.Apply(ctx, thing("a", nil))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Conflict))
	assert.Contains(t, err.Error(), "ci-runner-3")
	assert.Zero(t, p.Calls().Writes())

	// With a lock wait, the apply proceeds once the holder lets go.
	// The holder lets go once the engine logs that it is waiting.
	waiting := make(chan struct{})
	var once sync.Once
	logger := slog.New(&onMessage{msg: "waiting for state lock", fn: func() { once.Do(func() { close(waiting) }) }})
	e = newEngine(t, p, openctl.WithStore(st), openctl.WithLockWait(time.Minute), openctl.WithLogger(logger))
	go func() { <-waiting; _ = unlock() }()
	_, err = e.Apply(ctx, thing("a", nil))
	require.NoError(t, err)
}

func TestApplyCancelled(t *testing.T) {
	p := newTestProvider()
	ctx, cancel := context.WithCancel(t.Context())
	p.ApplyHook = func(c context.Context, r *manifest.Resource) error {
		if r.Metadata.Name == "first" {
			cancel()
		}
		<-c.Done()
		return c.Err()
	}
	e := newEngine(t, p, openctl.WithConcurrency(1))
	rep, err := e.Apply(ctx, thing("first", nil), thing("second", map[string]any{"x": ref("first", "status.ip")}))
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled))
	require.Len(t, rep.Results, 2)
	assert.Equal(t, openctl.OutcomeSkipped, rep.Results[1].Outcome)
	// The lock was released: a new apply can run.
	p.ApplyHook = nil
	_, err = e.Apply(t.Context(), thing("first", nil))
	require.NoError(t, err)
}

func TestApplyConcurrentCallsSerialise(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithLockWait(10*time.Second))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Apply(t.Context(), thing(fmt.Sprintf("r%d", i), nil), thing("shared", nil))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 5, p.Calls().Apply, "the shared resource is applied once; later applies see it unchanged")
}

func TestEngineGetInventoryDo(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	e := newEngine(t, p)
	_, err := e.Apply(ctx, thing("a", nil), thing("b", nil))
	require.NoError(t, err)
	f, err := e.Get(ctx, thingID("a"))
	require.NoError(t, err)
	assert.Equal(t, "ip-of-a", f.Resource.Status["ip"])
	_, err = e.Get(ctx, thingID("zzz"))
	assert.True(t, errors.Is(err, errcode.NotFound))
	inv, err := e.Inventory(ctx, testAV, "Thing", openctl.InventoryOptions{})
	require.NoError(t, err)
	require.Len(t, inv.Resources, 2)
	_, err = e.Do(ctx, thingID("a"), "start", nil, nil)
	assert.True(t, errors.Is(err, errcode.Invalid), "a provider without actions")
}

func TestNewOptions(t *testing.T) {
	_, err := openctl.New(openctl.WithConcurrency(0))
	assert.True(t, errors.Is(err, errcode.Invalid))
	_, err = openctl.New(openctl.WithProviders(newTestProvider(), newTestProvider()))
	assert.ErrorContains(t, err, "already registered")
	e, err := openctl.New()
	require.NoError(t, err)
	assert.NotNil(t, e.Store())
	assert.Empty(t, e.Registry().Names())
	var _ registry.Provider = newTestProvider()
}

func TestCompositeScaleDownPrunesChildren(t *testing.T) {
	ctx := t.Context()
	p := newTestProvider()
	st := state.NewMemory()
	e := newEngine(t, p, openctl.WithStore(st))
	group := &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": int64(4)}}
	_, err := e.Apply(ctx, group)
	require.NoError(t, err)

	group.Spec["count"] = int64(2)
	plan, err := e.Plan(ctx, group)
	require.NoError(t, err)
	for _, name := range []string{"g-2", "g-3"} {
		ch, ok := plan.Change(thingID(name))
		require.True(t, ok, name)
		assert.Equal(t, openctl.ActionDelete, ch.Action)
		assert.Equal(t, []string{"no longer planned by Group/g"}, ch.Reasons)
	}
	ch, _ := plan.Change(thingID("g-1"))
	assert.Equal(t, openctl.ActionNoOp, ch.Action)

	before := len(p.Log())
	rep, err := e.Apply(ctx, group)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeDeleted))
	log := p.Log()[before:]
	assert.ElementsMatch(t, []string{"delete Thing/g-2", "delete Thing/g-3", "apply Group/g"}, log)
	assert.Equal(t, "apply Group/g", log[2], "the scaled-down children go before the owner is applied")
	_, err = p.Get(ctx, thingID("g-3"))
	assert.True(t, errors.Is(err, errcode.NotFound))
	rec, err := st.Get(ctx, manifest.ID{APIVersion: testAV, Kind: "Group", Name: "g"})
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{thingID("g-0"), thingID("g-1")}, rec.Children)
	_, err = st.Get(ctx, thingID("g-2"))
	assert.True(t, errors.Is(err, errcode.NotFound), "the pruned child is forgotten")

	// A resource that still refers to a pruned child is refused.
	group.Spec["count"] = int64(1)
	_, err = e.Apply(ctx, group, thing("user", map[string]any{"x": ref("g-1", "status.ip")}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refers to Thing/g-1, which Group/g no longer plans")
}

func TestWithRegistryShared(t *testing.T) {
	reg := &registry.Registry{}
	p := newTestProvider()
	// Option order does not matter.
	e, err := openctl.New(openctl.WithProviders(p), openctl.WithRegistry(reg))
	require.NoError(t, err)
	assert.Same(t, reg, e.Registry())
	assert.Equal(t, []string{"test"}, reg.Names())
	_, err = openctl.New(openctl.WithRegistry(nil))
	assert.True(t, errors.Is(err, errcode.Invalid))
	_, err = openctl.New(openctl.WithStore(nil))
	assert.True(t, errors.Is(err, errcode.Invalid))
}

// onMessage is a slog.Handler that calls fn for every record whose message
// is msg, and discards everything.
type onMessage struct {
	msg string
	fn  func()
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *onMessage) WithGroup(string) slog.Handler      { return h }
