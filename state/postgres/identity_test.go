package postgres_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres/pgtest"
)

// Clients (each with its own connection pool, as separate processes have)
// that ask a new database for its identity at once agree on one; it
// survives reopening, and another database has another.
func TestStoreIDConcurrentClients(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Start(t)
	const n = 6
	ids := make([]string, n)
	stores := make([]state.Identified, n)
	for i := range stores {
		stores[i] = openStore(t, dsn)
	}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			id, err := s.StoreID(t.Context())
			assert.NoError(t, err)
			ids[i] = id
		})
	}
	wg.Wait()
	require.True(t, state.ValidStoreID(ids[0]), "identity %q", ids[0])
	for _, id := range ids {
		assert.Equal(t, ids[0], id, "%v", ids)
	}
	again, err := openStore(t, dsn).StoreID(t.Context())
	require.NoError(t, err)
	assert.Equal(t, ids[0], again)
	other, _ := newStore(t)
	oid, err := other.StoreID(t.Context())
	require.NoError(t, err)
	assert.NotEqual(t, ids[0], oid)
}
