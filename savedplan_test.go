package openctl_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/statetest"
)

const planPass = "plan passphrase"

func planPassphrase() (secret.Secret, error) { return secret.New(planPass), nil }

// sealingStore is a memory store that can seal (it has a passphrase), on
// the tests' shared data key (a key of its own would cost each test a
// passphrase derivation).
func sealingStore(t testing.TB) *state.Memory {
	t.Helper()
	kf, ring := statetest.Key(t, planPass)
	return state.NewMemory(state.MemoryPassphrase(planPassphrase), state.MemoryKey(kf, ring))
}

// savedPlanFixture applies a and b, then plans: a updated, b unchanged, c
// created (with a secret spec field), and saves the plan.
type savedPlanFixture struct {
	p    *testProvider
	e    *openctl.Engine
	plan *openctl.Plan
	file []byte
}

func newSavedPlanFixture(t testing.TB) *savedPlanFixture {
	t.Helper()
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithStore(sealingStore(t)))
	_, err := e.Apply(t.Context(), thing("a", map[string]any{"v": "1"}), thing("b", map[string]any{"v": "1"}))
	require.NoError(t, err)
	manifests := []*manifest.Resource{
		thing("a", map[string]any{"v": "2"}),
		thing("b", map[string]any{"v": "1"}),
		thing("c", map[string]any{"peer": ref("a", "status.ip"), "auth": map[string]any{"password": "hunter2-plan"}}),
	}
	plan, err := e.Plan(t.Context(), manifests...)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, e.SavePlan(t.Context(), plan, &buf))
	// Changing the manifests after planning changes nothing: ApplyPlan
	// reads none.
	manifests[2].Spec["auth"] = map[string]any{"password": "changed"}
	manifests[0].Spec["v"] = "99"
	return &savedPlanFixture{p: p, e: e, plan: plan, file: buf.Bytes()}
}

func (f *savedPlanFixture) load(t *testing.T, data []byte) *openctl.SavedPlan {
	t.Helper()
	sp, err := f.e.LoadPlan(t.Context(), bytes.NewReader(data))
	require.NoError(t, err)
	return sp
}

func TestSavedPlanAppliesExactly(t *testing.T) {
	f := newSavedPlanFixture(t)
	sp := f.load(t, f.file)
	var actions []string
	for _, c := range sp.Plan().Changes {
		actions = append(actions, c.ID.Name+":"+string(c.Action))
	}
	assert.Equal(t, []string{"a:update", "b:no-op", "c:create"}, actions)
	assert.Equal(t, f.plan.Waves, sp.Plan().Waves)

	before := f.p.Calls().Writes()
	rep, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
	require.NoError(t, err)
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.ID.Name+":"+string(r.Outcome))
	}
	assert.Equal(t, []string{"a:updated", "c:created"}, got, "exactly the plan's changes; b is not touched")
	assert.Equal(t, before+2, f.p.Calls().Writes())
	assert.Equal(t, []string{"apply Thing/a", "apply Thing/c"}, f.p.Log()[2:], "after the first Apply's two")

	a, err := f.p.Get(t.Context(), thingID("a"))
	require.NoError(t, err)
	assert.Equal(t, "2", a.Spec["v"], "as planned, not as the manifest says now")
	c, err := f.p.Get(t.Context(), thingID("c"))
	require.NoError(t, err)
	assert.Equal(t, "hunter2-plan", c.Spec["auth"].(map[string]any)["password"], "the sealed secret, opened")
	assert.Equal(t, "ip-of-a", c.Spec["peer"], "$refs resolved at apply time")

	// Applying the same plan again is refused: the state moved.
	_, err = f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
	require.ErrorIs(t, err, openctl.ErrPlanStale)
}

func TestSavedPlanHoldsNoSecretInClear(t *testing.T) {
	f := newSavedPlanFixture(t)
	assert.NotContains(t, string(f.file), "hunter2")
	assert.Contains(t, string(f.file), `"ciphertext"`)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(f.file, &doc))
	assert.Equal(t, "openctl.io/v1", doc["apiVersion"])
	assert.Equal(t, "SavedPlan", doc["kind"])
	assert.Regexp(t, `^hmac-sha256:[0-9a-f]{64}$`, doc["digest"])
}

func TestApplyPlanRefusesMovedState(t *testing.T) {
	f := newSavedPlanFixture(t)
	sp := f.load(t, f.file)
	// Someone applies in between: a's record has a new generation.
	_, err := f.e.Apply(t.Context(), thing("a", map[string]any{"v": "3"}))
	require.NoError(t, err)
	writes := f.p.Calls().Writes()
	rep, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
	require.Nil(t, rep)
	require.ErrorIs(t, err, openctl.ErrPlanStale)
	assert.True(t, errcode.Is(err, errcode.Conflict))
	assert.Contains(t, err.Error(), "Thing/a")
	assert.Contains(t, err.Error(), "generation 1")
	assert.Contains(t, err.Error(), "generation 2")
	assert.Equal(t, writes, f.p.Calls().Writes(), "nothing changed")
	_, err = f.p.Get(t.Context(), thingID("c"))
	assert.True(t, errcode.Is(err, errcode.NotFound), "c was not created")
}

func TestApplyPlanRefusesAppearedAndVanished(t *testing.T) {
	t.Run("appeared", func(t *testing.T) {
		f := newSavedPlanFixture(t)
		sp := f.load(t, f.file)
		f.p.Put(thing("c", map[string]any{"v": "made elsewhere"}))
		writes := f.p.Calls().Writes()
		_, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
		require.ErrorIs(t, err, openctl.ErrPlanStale)
		assert.Contains(t, err.Error(), "Thing/c: the plan found it absent live, it is now present live")
		assert.Equal(t, writes, f.p.Calls().Writes())
	})
	t.Run("vanished", func(t *testing.T) {
		f := newSavedPlanFixture(t)
		sp := f.load(t, f.file)
		f.p.Remove(thingID("b"))
		writes := f.p.Calls().Writes()
		_, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
		require.ErrorIs(t, err, openctl.ErrPlanStale)
		assert.Contains(t, err.Error(), "Thing/b: the plan found it present live, it is now absent live")
		assert.Equal(t, writes, f.p.Calls().Writes())
	})
	t.Run("forgotten", func(t *testing.T) {
		f := newSavedPlanFixture(t)
		sp := f.load(t, f.file)
		require.NoError(t, f.e.Store().Delete(t.Context(), thingID("a")))
		_, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
		require.ErrorIs(t, err, openctl.ErrPlanStale)
		assert.Contains(t, err.Error(), "Thing/a: the plan read state record generation 1")
		assert.Contains(t, err.Error(), "the state now has no state record")
	})
}

func TestApplyPlanRefusesChangedDiff(t *testing.T) {
	tp := newTestProvider()
	drift := false
	tp.diff = func(desired, live *manifest.Resource) registry.Diff {
		if drift {
			return registry.Diff{Action: registry.DiffReplace, Reasons: []string{"the template changed"}}
		}
		if manifest.Equal(desired.Spec, live.Spec) {
			return registry.Diff{Action: registry.DiffNone}
		}
		return registry.Diff{Action: registry.DiffUpdate}
	}
	e := newEngine(t, differProvider{tp}, openctl.WithStore(sealingStore(t)))
	_, err := e.Apply(t.Context(), thing("a", map[string]any{"v": "1"}))
	require.NoError(t, err)
	plan, err := e.Plan(t.Context(), thing("a", map[string]any{"v": "2"}))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, e.SavePlan(t.Context(), plan, &buf))
	sp, err := e.LoadPlan(t.Context(), &buf)
	require.NoError(t, err)
	drift = true // the live resource changed in a way the provider now sees otherwise
	writes := tp.Calls().Writes()
	_, err = e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
	require.ErrorIs(t, err, openctl.ErrPlanStale)
	assert.Contains(t, err.Error(), "Thing/a: the plan says update, planning now says replace (the template changed)")
	assert.Equal(t, writes, tp.Calls().Writes())
}

func TestApplyPlanRefusesEditedFile(t *testing.T) {
	edits := map[string]func(doc string) string{
		"spec value": func(doc string) string { return strings.Replace(doc, `"v": "2"`, `"v": "3"`, 1) },
		"action":     func(doc string) string { return strings.Replace(doc, `"action": "no-op"`, `"action": "create"`, 1) },
		"generation": func(doc string) string { return strings.Replace(doc, `"generation": 1`, `"generation": 2`, 1) },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			f := newSavedPlanFixture(t)
			edited := edit(string(f.file))
			require.NotEqual(t, string(f.file), edited)
			// Recompute a plain checksum over the content: it does not help.
			var doc map[string]any
			require.NoError(t, json.Unmarshal([]byte(edited), &doc))
			doc["digest"] = ""
			body, _ := json.Marshal(doc)
			sum := sha256.Sum256(body)
			doc["digest"] = "hmac-sha256:" + hex.EncodeToString(sum[:])
			data, _ := json.Marshal(doc)

			sp := f.load(t, data)
			writes := f.p.Calls().Writes()
			_, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
			require.ErrorIs(t, err, openctl.ErrPlanModified)
			assert.True(t, errcode.Is(err, errcode.Invalid))
			assert.Equal(t, writes, f.p.Calls().Writes())
		})
	}
	t.Run("one byte", func(t *testing.T) {
		f := newSavedPlanFixture(t)
		data := bytes.Replace(f.file, []byte(`"v": "2"`), []byte(`"v": "7"`), 1)
		_, err := f.e.ApplyPlan(t.Context(), f.load(t, data), openctl.ApplyPlanOptions{})
		require.ErrorIs(t, err, openctl.ErrPlanModified)
	})
	t.Run("unedited, re-encoded", func(t *testing.T) {
		f := newSavedPlanFixture(t)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(f.file, &doc))
		data, _ := json.Marshal(doc) // same content, other layout
		_, err := f.e.ApplyPlan(t.Context(), f.load(t, data), openctl.ApplyPlanOptions{})
		require.NoError(t, err)
	})
}

func TestApplyPlanRefusesAnotherStore(t *testing.T) {
	f := newSavedPlanFixture(t)
	// Another store, with a data key of its own.
	other := newEngine(t, f.p, openctl.WithStore(state.NewMemory(state.MemoryPassphrase(planPassphrase))))
	sp, err := other.LoadPlan(t.Context(), bytes.NewReader(f.file))
	require.NoError(t, err)
	_, err = other.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
	require.ErrorIs(t, err, openctl.ErrPlanOtherStore)
	assert.Contains(t, err.Error(), sp.StoreID())
}

func TestApplyPlanRefusesOtherContext(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithStore(sealingStore(t)))
	plan, err := e.Plan(t.Context(), thing("a", nil))
	require.NoError(t, err)
	plan.Contexts = map[string]string{"test": "lab"}
	var buf bytes.Buffer
	require.NoError(t, e.SavePlan(t.Context(), plan, &buf))
	sp, err := e.LoadPlan(t.Context(), &buf)
	require.NoError(t, err)
	assert.Equal(t, []openctl.PlanProvider{{Name: "test", Context: "lab"}}, sp.Providers())
	_, err = e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{Contexts: map[string]string{"test": "prod"}})
	require.ErrorIs(t, err, openctl.ErrPlanOtherStore)
	assert.Contains(t, err.Error(), `provider test: it was made against context "lab", this is "prod"`)
	_, err = e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{Contexts: map[string]string{"test": "lab"}})
	require.NoError(t, err)
}

func TestApplyPlanMaxAge(t *testing.T) {
	f := newSavedPlanFixture(t)
	sp := f.load(t, f.file)
	later := func(d time.Duration) func() time.Time { return func() time.Time { return sp.Created().Add(d) } }
	_, err := f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{Now: later(25 * time.Hour)})
	require.ErrorIs(t, err, openctl.ErrPlanExpired, "the default is 24h")
	assert.Contains(t, err.Error(), "the limit is 24h0m0s")
	_, err = f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{MaxAge: time.Hour, Now: later(2 * time.Hour)})
	require.ErrorIs(t, err, openctl.ErrPlanExpired)
	assert.Zero(t, f.p.Calls().Writes()-2, "only the first Apply's writes")
	_, err = f.e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{MaxAge: -1, Now: later(1000 * time.Hour)})
	require.NoError(t, err, "a negative MaxAge is no limit")
}

func TestSavePlanNeedsTheStoreKey(t *testing.T) {
	t.Setenv("OPENCTL_STATE_PASSPHRASE", "")
	t.Setenv("OPENCTL_STATE_PASSPHRASE_FILE", "")
	e := newEngine(t, newTestProvider()) // a memory store without passphrase
	plan, err := e.Plan(t.Context(), thing("a", nil))
	require.NoError(t, err)
	var buf bytes.Buffer
	err = e.SavePlan(t.Context(), plan, &buf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OPENCTL_STATE_PASSPHRASE")
	assert.Zero(t, buf.Len())

	err = e.SavePlan(t.Context(), &openctl.Plan{}, &buf)
	require.ErrorContains(t, err, "only a plan that Engine.Plan made can be saved")
}

func TestSavedPlanDelete(t *testing.T) {
	// A composite scaled down: the plan deletes a child; ApplyPlan does.
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithStore(sealingStore(t)))
	group := func(n int64) *manifest.Resource {
		return &manifest.Resource{APIVersion: testAV, Kind: "Group", Metadata: manifest.Metadata{Name: "g"}, Spec: map[string]any{"count": n}}
	}
	_, err := e.Apply(t.Context(), group(2))
	require.NoError(t, err)
	plan, err := e.Plan(t.Context(), group(1))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, e.SavePlan(t.Context(), plan, &buf))
	sp, err := e.LoadPlan(t.Context(), &buf)
	require.NoError(t, err)
	rep, err := e.ApplyPlan(t.Context(), sp, openctl.ApplyPlanOptions{})
	require.NoError(t, err)
	r, ok := rep.Result(thingID("g-1"))
	require.True(t, ok)
	assert.Equal(t, openctl.OutcomeDeleted, r.Outcome)
	_, err = p.Get(t.Context(), thingID("g-1"))
	assert.True(t, errcode.Is(err, errcode.NotFound))
}

func TestLoadPlanStrict(t *testing.T) {
	f := newSavedPlanFixture(t)
	cases := map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"unknown field": {func(d map[string]any) { d["extra"] = 1 }, `unknown field "extra"`},
		"apiVersion":    {func(d map[string]any) { d["apiVersion"] = "openctl.io/v2" }, `apiVersion: "openctl.io/v2": want openctl.io/v1`},
		"kind":          {func(d map[string]any) { d["kind"] = "Plan" }, `kind: "Plan": want SavedPlan`},
		"action": {func(d map[string]any) {
			d["resources"].([]any)[0].(map[string]any)["action"] = "explode"
		}, `resources[0].action: "explode"`},
		"live": {func(d map[string]any) {
			d["resources"].([]any)[1].(map[string]any)["live"] = "maybe"
		}, `resources[1].live: "maybe"`},
		"type": {func(d map[string]any) { d["created"] = 5 }, `created`},
		"after": {func(d map[string]any) {
			d["resources"].([]any)[0].(map[string]any)["after"] = []any{map[string]any{"apiVersion": testAV, "kind": "Thing", "name": "zz"}}
		}, `resources[0].after[0]: Thing/zz is not a resource of the plan`},
		"digest": {func(d map[string]any) { d["digest"] = "md5:00" }, `digest: want hmac-sha256:`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(f.file, &doc))
			tc.edit(doc)
			data, _ := json.Marshal(doc)
			_, err := f.e.LoadPlan(t.Context(), bytes.NewReader(data))
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid), err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := f.e.LoadPlan(t.Context(), bytes.NewReader(append(bytes.Clone(f.file), []byte("{}")...)))
	require.ErrorContains(t, err, "data after the saved plan")
}

func TestDrift(t *testing.T) {
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithStore(sealingStore(t)))
	_, err := e.Apply(t.Context(), thing("a", map[string]any{"v": "1"}), thing("b", map[string]any{"v": "1", "auth": map[string]any{"password": "pw1"}}), thing("c", nil))
	require.NoError(t, err)

	d, err := e.Drift(t.Context())
	require.NoError(t, err)
	assert.False(t, d.HasChanges(), "%+v", d.Changes)
	assert.Len(t, d.Changes, 3)

	live, _ := p.Get(t.Context(), thingID("a"))
	live.Spec["v"] = "edited"
	p.Put(live)
	live, _ = p.Get(t.Context(), thingID("b"))
	live.Spec["auth"] = map[string]any{"password": "pw2"}
	p.Put(live)
	p.Remove(thingID("c"))

	d, err = e.Drift(t.Context())
	require.NoError(t, err)
	require.True(t, d.HasChanges())
	byName := map[string]openctl.Change{}
	for _, c := range d.Changes {
		byName[c.ID.Name] = c
	}
	assert.Equal(t, openctl.ActionUpdate, byName["a"].Action)
	assert.Equal(t, []manifest.FieldChange{{Path: "spec.v", Old: "1", New: "edited"}}, byName["a"].Fields)
	assert.Equal(t, []string{"changed outside openctl"}, byName["a"].Reasons)
	assert.Equal(t, openctl.ActionUpdate, byName["b"].Action)
	assert.NotContains(t, fmtChanges(byName["b"]), "pw")
	assert.Equal(t, openctl.ActionCreate, byName["c"].Action)

	// Only the resources given.
	d, err = e.Drift(t.Context(), thing("a", nil), thing("never-applied", nil))
	require.NoError(t, err)
	require.Len(t, d.Changes, 1)
	assert.Equal(t, "a", d.Changes[0].ID.Name)
}

func fmtChanges(c openctl.Change) string {
	b, _ := json.Marshal(c.Fields)
	return string(b)
}

// TestApplyPlanRefusesAnotherProgram: a plan made by another build of
// the program (its compiled-in providers may plan differently) is
// refused, naming both, with nothing changed.
func TestApplyPlanRefusesAnotherProgram(t *testing.T) {
	f := newSavedPlanFixture(t)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(f.file, &doc))
	assert.NotEmpty(t, doc["program"], "the plan records the program that made it")
	doc["program"] = "github.com/openctl/openctl@v0.0.1"
	data, _ := json.Marshal(doc)
	writes := f.p.Calls().Writes()
	_, err := f.e.ApplyPlan(t.Context(), f.load(t, data), openctl.ApplyPlanOptions{})
	require.ErrorIs(t, err, openctl.ErrPlanOtherStore)
	assert.ErrorContains(t, err, "made by github.com/openctl/openctl@v0.0.1")
	assert.Equal(t, writes, f.p.Calls().Writes())
}
