package postgres_test

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
	"github.com/openctl/openctl/state/postgres/pgtest"
)

// keyValueDSN returns the libpq key=value form of a postgres:// URL.
func keyValueDSN(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	kv := []string{"host=" + u.Hostname(), "port=" + u.Port(), "user=" + u.User.Username(), "dbname=" + strings.TrimPrefix(u.Path, "/")}
	for k, v := range u.Query() {
		kv = append(kv, k+"="+v[0])
	}
	return strings.Join(kv, " ")
}

func TestBackendOpensEveryDSNForm(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Start(t)
	var stores state.Backends
	require.NoError(t, stores.Register(state.FileBackend{}, postgres.Backend{}))
	assert.Equal(t, []string{"file", "postgres", "postgresql"}, stores.Schemes())

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	rec := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "a", SpecHash: "h", Spec: map[string]any{"size": int64(1)}}
	for i, tt := range []struct{ name, dsn string }{
		{"postgres URL", dsn},
		{"postgresql URL", "postgresql" + strings.TrimPrefix(dsn, "postgres")},
		{"key=value", keyValueDSN(t, dsn)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := stores.Open(ctx, tt.dsn, state.OpenOptions{Passphrase: passphrase})
			require.NoError(t, err)
			pst, ok := st.(*postgres.Store)
			require.True(t, ok, "%T", st)
			c, ok := st.(io.Closer)
			require.True(t, ok, "a PostgreSQL store is an io.Closer")
			defer func() { require.NoError(t, c.Close()) }()

			if i == 0 {
				_, err := pst.Put(ctx, rec)
				require.NoError(t, err)
			}
			got, err := st.Get(ctx, rec.ID())
			require.NoError(t, err, "every form names the same database")
			assert.Equal(t, int64(1), got.Generation)
			assert.Equal(t, rec.Spec, got.Spec)
		})
	}
}

func TestBackendErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	var stores state.Backends
	require.NoError(t, stores.Register(postgres.Backend{}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, dsn := range []string{
		"postgres://ci:s3cret@127.0.0.1:bad/x",
		"host=127.0.0.1 port=notaport password=s3cret",
		"file:/tmp/x?password=s3cret",
	} {
		_, err := stores.Open(ctx, dsn, state.OpenOptions{})
		require.Error(t, err, dsn)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
		assert.NotContains(t, err.Error(), "s3cret")
	}
}
