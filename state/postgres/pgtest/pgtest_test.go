package pgtest_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/state/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStartGivesEachTestItsOwnDatabase(t *testing.T) {
	ctx := t.Context()
	var names []string
	for range 2 {
		dsn := pgtest.Start(t)
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		var db string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
		_, err = conn.Exec(ctx, "CREATE TABLE t (x int)")
		require.NoError(t, err, "a fresh database has no table t")
		require.NoError(t, conn.Close(ctx))
		names = append(names, db)
	}
	assert.NotEqual(t, names[0], names[1])
}
