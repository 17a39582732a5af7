package openctl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// TestApplyWithFileStore runs the engine on the default persistent store:
// secrets a provider marks are sealed on disk, and a second engine on the
// same directory (a later run of the program) sees nothing to do.
func TestApplyWithFileStore(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	passphrase := func() (secret.Secret, error) { return secret.New("correct horse battery staple"), nil }
	open := func() state.Store {
		st, err := state.OpenFile(dir, state.FileOptions{Passphrase: passphrase})
		require.NoError(t, err)
		return st
	}
	p := newTestProvider()
	e := newEngine(t, p, openctl.WithStore(open()))
	_, err := e.Apply(ctx, thing("db", nil), thing("web", map[string]any{"db": ref("db", "status.ip")}))
	require.NoError(t, err)

	// The provider's status.token is a secret field: sealed, never in plain text.
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}))
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "secret-of-web", f)
		info, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}
	assert.FileExists(t, filepath.Join(dir, "test", "Thing", "web.yaml"))

	// A new engine and store on the same directory: unchanged, no writes.
	writes := p.Calls().Writes()
	st2 := open()
	e2 := newEngine(t, p, openctl.WithStore(st2))
	rep, err := e2.Apply(ctx, thing("db", nil), thing("web", map[string]any{"db": ref("db", "status.ip")}))
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(openctl.OutcomeUnchanged))
	assert.Equal(t, writes, p.Calls().Writes())
	rec, err := st2.Get(ctx, thingID("web"))
	require.NoError(t, err)
	assert.Equal(t, "secret-of-web", rec.Secrets["status.token"].Reveal())
}

// TestFileStorePassphraseIsCheckedBeforeWrites: with the real file store,
// a missing or wrong passphrase fails an apply of a kind with secret
// fields before the provider creates anything (it used to create the
// resource, then fail to record it).
func TestFileStorePassphraseIsCheckedBeforeWrites(t *testing.T) {
	dir := t.TempDir()
	right := func() (secret.Secret, error) { return secret.New("correct horse battery staple"), nil }
	st, err := state.OpenFile(dir, state.FileOptions{Passphrase: right})
	require.NoError(t, err)
	_, err = newEngine(t, newTestProvider(), openctl.WithStore(st)).Apply(t.Context(), thing("first", nil))
	require.NoError(t, err, "the store's key is created with the right passphrase")

	for name, pass := range map[string]func() (secret.Secret, error){
		"missing": func() (secret.Secret, error) {
			return secret.Secret{}, errcode.New(errcode.Invalid, "seal: no state passphrase: set OPENCTL_STATE_PASSPHRASE")
		},
		"wrong": func() (secret.Secret, error) { return secret.New("not the passphrase at all"), nil },
	} {
		t.Run(name, func(t *testing.T) {
			st, err := state.OpenFile(dir, state.FileOptions{Passphrase: pass})
			require.NoError(t, err)
			p := newTestProvider()
			_, err = newEngine(t, p, openctl.WithStore(st)).Apply(t.Context(), thing("web", nil))
			require.Error(t, err)
			var se *openctl.StateError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "unlock", se.Op)
			assert.Zero(t, p.Calls().Writes(), "nothing is created before the store can record it")
		})
	}
}

// specSecretProvider serves a kind whose only secret field is in the
// spec, like a VM's cloud-init password.
type specSecretProvider struct{ *providertest.Fake }

func (p specSecretProvider) Kinds() []registry.Kind {
	return []registry.Kind{{Kind: "Box", SecretFields: []string{"spec.password"}}}
}

// TestPassphraseOnlyWhenASecretIsSet: a resource that sets no secret
// field needs no passphrase, even when its kind has secret spec fields
// (a VM without a cloud-init password); one that sets it does, before
// anything is created.
func TestPassphraseOnlyWhenASecretIsSet(t *testing.T) {
	none := func() (secret.Secret, error) {
		return secret.Secret{}, errcode.New(errcode.Invalid, "seal: no state passphrase: set OPENCTL_STATE_PASSPHRASE")
	}
	st, err := state.OpenFile(t.TempDir(), state.FileOptions{Passphrase: none})
	require.NoError(t, err)
	p := specSecretProvider{providertest.NewFake("boxes", "Box")}
	e := newEngine(t, p, openctl.WithStore(st))
	box := func(name string, spec map[string]any) *manifest.Resource {
		return &manifest.Resource{APIVersion: "boxes.openctl.io/v1", Kind: "Box", Metadata: manifest.Metadata{Name: name}, Spec: spec}
	}
	_, err = e.Apply(t.Context(), box("plain", map[string]any{"size": int64(1)}))
	require.NoError(t, err)

	_, err = e.Apply(t.Context(), box("locked", map[string]any{"password": "hunter2"}))
	var se *openctl.StateError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "unlock", se.Op)
	_, getErr := p.Get(t.Context(), manifest.ID{APIVersion: "boxes.openctl.io/v1", Kind: "Box", Name: "locked"})
	assert.True(t, errcode.Is(getErr, errcode.NotFound), "nothing was created: %v", getErr)
}
