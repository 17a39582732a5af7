package postgres_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
	"github.com/openctl/openctl/state/postgres/pgtest"
)

// A one-character passphrase was once accepted without a word: the store
// warns, once, when it first uses a passphrase shorter than
// seal.MinPassphraseLength.
func TestWarnsOfShortPassphrase(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Start(t)
	var logs bytes.Buffer
	s, err := postgres.Open(t.Context(), dsn, postgres.Options{
		Passphrase: func() (secret.Secret, error) { return secret.New("x"), nil },
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	rec := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "a",
		Secrets: map[string]secret.Secret{"status.token": secret.New("tok")}}
	_, err = s.Put(t.Context(), rec)
	require.NoError(t, err)
	_, err = s.Get(t.Context(), rec.ID())
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "has 1 characters, fewer than 12")
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("level=WARN")), logs.String())
}
