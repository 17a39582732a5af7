package state_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// A one-character passphrase was once accepted without a word: the store
// now warns, once, when it first uses a passphrase shorter than
// seal.MinPassphraseLength — for a new store and for an existing one.
func TestFileStoreWarnsOfShortPassphrase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	rec := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "a",
		Secrets: map[string]secret.Secret{"status.token": secret.New("tok")}}
	for _, step := range []string{"new store", "existing store"} {
		var logs bytes.Buffer
		s, err := state.OpenFile(dir, state.FileOptions{
			Passphrase: func() (secret.Secret, error) { return secret.New("x"), nil },
			Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		})
		require.NoError(t, err)
		if step == "new store" {
			_, err = s.Put(t.Context(), rec)
			require.NoError(t, err)
		}
		got, err := s.Get(t.Context(), rec.ID())
		require.NoError(t, err)
		assert.Equal(t, "tok", got.Secrets["status.token"].Reveal())
		assert.Contains(t, logs.String(), "level=WARN", step)
		assert.Contains(t, logs.String(), "has 1 characters, fewer than 12", step)
		assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("level=WARN")), "%s: warn once: %s", step, logs.String())
	}
}
