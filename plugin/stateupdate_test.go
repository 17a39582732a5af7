package plugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
)

// recorder is a registry.ChildRecorder that remembers what it is told.
type recorder struct {
	mu      sync.Mutex
	applied []*manifest.Resource
	deleted []manifest.ID
	listed  []manifest.ID
}

func (r *recorder) ChildApplied(_ context.Context, child, _ *manifest.Resource) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, child)
	return nil
}

func (r *recorder) ChildDeleted(_ context.Context, id manifest.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, id)
	return nil
}

func (r *recorder) ChildListed(_ context.Context, id manifest.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listed = append(r.listed, id)
	return nil
}

// notesRegistry is a registry serving the example notes plugin.
func notesRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	notes, err := plugin.Load(t.Context(), notesPlugin(t), plugin.Options{})
	require.NoError(t, err)
	reg := &registry.Registry{}
	require.NoError(t, reg.Register(plugin.New(notes, plugin.NewConfig(map[string]any{"dir": t.TempDir()}), plugin.Options{})))
	return reg
}

func applyThing(t *testing.T, p *plugin.Provider, ctx context.Context) (*manifest.Resource, error) {
	t.Helper()
	return p.Apply(ctx, &manifest.Resource{APIVersion: thing.APIVersion, Kind: "Thing", Metadata: manifest.Metadata{Name: "a"}})
}

func TestStateUpdate(t *testing.T) {
	reg := notesRegistry(t)
	opts := plugin.Options{Dispatcher: plugin.RegistryDispatcher{Registry: reg}}

	t.Run("saved state is the resource, children listed", func(t *testing.T) {
		body := `echo '{"status":"success","stateUpdate":{"operation":"save","provider":"fake","name":"a","state":{"apiVersion":"fake.openctl.io/v1","kind":"Thing","spec":{"n":1},"status":{"phase":"Ready"},"children":[{"provider":"notes","kind":"Note","name":"n1"}]}}}'`
		rec := &recorder{}
		ctx := registry.WithCall(t.Context(), registry.Call{Children: rec})
		r, err := applyThing(t, fake(t, body, opts, nil), ctx)
		require.NoError(t, err)
		assert.Equal(t, "Ready", r.Status["phase"])
		assert.Equal(t, thing, r.ID())
		assert.Equal(t, []manifest.ID{{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "n1"}}, rec.listed)
	})
	t.Run("a response's resource wins over the saved state", func(t *testing.T) {
		body := `echo '{"status":"success","resource":{"metadata":{"name":"a"},"status":{"phase":"FromResource"}},"stateUpdate":{"operation":"save","state":{"status":{"phase":"FromState"}}}}'`
		r, err := applyThing(t, fake(t, body, opts, nil), t.Context())
		require.NoError(t, err)
		assert.Equal(t, "FromResource", r.Status["phase"])
	})
	t.Run("delete with a delete update", func(t *testing.T) {
		body := `echo '{"status":"success","stateUpdate":{"operation":"delete","provider":"fake","name":"a"}}'`
		require.NoError(t, fake(t, body, opts, nil).Delete(t.Context(), thing))
	})
	for _, tt := range []struct{ name, update, want string }{
		{"other provider", `{"operation":"save","provider":"k3s","name":"a"}`, `provider "k3s" is not this plugin`},
		{"other name", `{"operation":"save","name":"b"}`, `name "b", but the request is about "a"`},
		{"delete answering apply", `{"operation":"delete","name":"a"}`, "operation delete answering apply"},
		{"other kind", `{"operation":"save","state":{"kind":"Cluster"}}`, "state is a  Cluster"},
		{"unknown operation", `{"operation":"merge"}`, `operation "merge"`},
		{"child without a name", `{"operation":"save","state":{"children":[{"provider":"notes","kind":"Note"}]}}`, "child 0 lacks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `echo '{"status":"success","resource":{"metadata":{"name":"a"}},"stateUpdate":` + tt.update + `}'`
			_, err := applyThing(t, fake(t, body, opts, nil), t.Context())
			require.ErrorIs(t, err, plugin.ErrProtocol)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	t.Run("save answering delete", func(t *testing.T) {
		body := `echo '{"status":"success","stateUpdate":{"operation":"save","name":"a"}}'`
		err := fake(t, body, opts, nil).Delete(t.Context(), thing)
		require.ErrorIs(t, err, plugin.ErrProtocol)
		assert.Contains(t, err.Error(), "operation save answering delete")
	})
	t.Run("unknown child kind", func(t *testing.T) {
		body := `echo '{"status":"success","resource":{"metadata":{"name":"a"}},"stateUpdate":{"operation":"save","state":{"children":[{"provider":"notes","kind":"Memo","name":"m"}]}}}'`
		ctx := registry.WithCall(t.Context(), registry.Call{Children: &recorder{}})
		_, err := applyThing(t, fake(t, body, opts, nil), ctx)
		require.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "stateUpdate child notes Memo/m")
	})
	t.Run("children and no dispatcher", func(t *testing.T) {
		body := `echo '{"status":"success","resource":{"metadata":{"name":"a"}},"stateUpdate":{"operation":"save","state":{"children":[{"provider":"notes","kind":"Note","name":"n"}]}}}'`
		ctx := registry.WithCall(t.Context(), registry.Call{Children: &recorder{}})
		_, err := applyThing(t, fake(t, body, plugin.Options{}, nil), ctx)
		require.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "no dispatcher")
	})
}

func TestDispatchRecordsChildren(t *testing.T) {
	reg := notesRegistry(t)
	opts := plugin.Options{Dispatcher: plugin.RegistryDispatcher{Registry: reg}}
	note := func(name, action, extra string) string {
		return `{"id":"` + name + `","provider":"notes","action":"` + action + `","resourceType":"Note","manifest":{"apiVersion":"notes.openctl.io/v1","kind":"Note","metadata":{"name":"` + name + `"},"spec":{"text":"x"}}` + extra + `}`
	}
	round := func(reqs ...string) string {
		return `case $(cat) in
*'"continuationToken":"done"'*) echo '{"status":"success","resource":{"metadata":{"name":"a"}}}' ;;
*) echo '{"status":"success","dispatchRequests":[` + strings.Join(reqs, ",") + `],"continuation":{"token":"done"}}' ;;
esac`
	}

	rec := &recorder{}
	ctx := registry.WithCall(t.Context(), registry.Call{Children: rec})
	_, err := applyThing(t, fake(t, round(note("n1", "create", ""), note("n2", "apply", "")), opts, nil), ctx)
	require.NoError(t, err)
	require.Len(t, rec.applied, 2)
	for _, c := range rec.applied {
		o, ok := c.Owner()
		require.True(t, ok, "the dispatched manifest carries its owner's labels")
		assert.Equal(t, thing, o)
	}
	notesProv, _, err := reg.Lookup(manifest.ID{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "n1"})
	require.NoError(t, err)
	live, err := notesProv.Get(t.Context(), manifest.ID{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, "Thing", live.Metadata.Labels[manifest.LabelOwnerKind], "the child was applied with its owner labels")

	// A delete request deletes through the registry and is reported.
	_, err = applyThing(t, fake(t, round(note("n1", "delete", "")), opts, nil), ctx)
	require.NoError(t, err)
	assert.Equal(t, []manifest.ID{{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "n1"}}, rec.deleted)
	_, err = notesProv.Get(t.Context(), manifest.ID{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "n1"})
	assert.ErrorIs(t, err, errcode.NotFound)

	// Requests that do not add up fail as dispatch results, reported back
	// to the plugin; nothing is applied or recorded for them.
	for _, tt := range []struct{ name, req, want string }{
		{"provider mismatch", strings.Replace(note("n3", "apply", ""), `"provider":"notes"`, `"provider":"proxmox"`, 1), `provider "proxmox", but notes.openctl.io/v1 is served by notes`},
		{"resourceType mismatch", strings.Replace(note("n3", "apply", ""), `"resourceType":"Note"`, `"resourceType":"Memo"`, 1), `resourceType "Memo" but the manifest is a Note`},
		{"unknown action", note("n3", "patch", ""), `action "patch" is not supported`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			seen := filepath.Join(t.TempDir(), "request.json")
			body := `req=$(cat)
case $req in
*'"continuationToken":"done"'*) printf '%s' "$req" >` + seen + `; echo '{"status":"success","resource":{"metadata":{"name":"a"}}}' ;;
*) echo '{"status":"success","dispatchRequests":[` + tt.req + `],"continuation":{"token":"done"}}' ;;
esac`
			_, err := applyThing(t, fake(t, body, opts, nil), registry.WithCall(t.Context(), registry.Call{Children: rec}))
			require.NoError(t, err)
			data, err := os.ReadFile(seen)
			require.NoError(t, err)
			var got plugin.Request
			require.NoError(t, json.Unmarshal(data, &got))
			require.Len(t, got.DispatchResults, 1)
			assert.Equal(t, "error", got.DispatchResults[0].Status)
			assert.Equal(t, "INVALID_REQUEST", got.DispatchResults[0].Error.Code)
			assert.Contains(t, got.DispatchResults[0].Error.Message, tt.want)
			assert.Empty(t, rec.applied)
			_, gerr := notesProv.Get(t.Context(), manifest.ID{APIVersion: "notes.openctl.io/v1", Kind: "Note", Name: "n3"})
			assert.ErrorIs(t, gerr, errcode.NotFound)
		})
	}
}

// composite serves a composite kind, which only the engine can apply.
type composite struct{ *providertest.Fake }

func (composite) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Group", Composite: true}, {Kind: "Node", ReadOnly: true}}
}

func TestDispatchRefusesCompositeAndReadOnly(t *testing.T) {
	reg := &registry.Registry{}
	require.NoError(t, reg.Register(composite{providertest.NewFake("comp", "Group", "Node")}))
	d := plugin.RegistryDispatcher{Registry: reg}
	for kind, want := range map[string]string{"Group": "is a composite", "Node": "is read-only"} {
		_, err := d.Dispatch(t.Context(), plugin.DispatchRequest{ID: "x", Action: plugin.ActionApply,
			Manifest: &manifest.Resource{APIVersion: "comp.openctl.io/v1", Kind: kind, Metadata: manifest.Metadata{Name: "g"}}})
		require.ErrorIs(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), want)
	}
}
