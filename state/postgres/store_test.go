package postgres_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
	"github.com/openctl/openctl/state/postgres/pgtest"
	"github.com/openctl/openctl/state/seal"
	"github.com/openctl/openctl/state/statetest"
)

// A passphrase derivation costs about 2 s under the race detector, and
// every fresh database gets a fresh key. The conformance kits test the
// Store contract, not key creation (the tests below do), so their stores
// come from a few databases that share one key: each newStore call hands
// out the next of them, emptied (the key stays).
type reusedStores struct {
	stores []*postgres.Store
	dsns   []string
	next   map[*testing.T]int // stores handed out to each subtest
}

func newReusedStores(t *testing.T, n int) *reusedStores {
	ctx := t.Context()
	r := &reusedStores{next: map[*testing.T]int{}}
	for i := range n {
		s, dsn := newStore(t)
		r.stores, r.dsns = append(r.stores, s), append(r.dsns, dsn)
		if i == 0 {
			_, err := s.Put(ctx, thing("seed", "creates the key"))
			require.NoError(t, err)
			continue
		}
		key, err := r.stores[0].Key(ctx)
		require.NoError(t, err)
		require.NoError(t, s.ImportRaw(ctx, key, nil))
	}
	return r
}

func (r *reusedStores) get(t *testing.T) *postgres.Store {
	i := r.next[t]
	r.next[t]++
	require.Less(t, i, len(r.stores), "a subtest wants more stores than were made")
	var done int
	require.NoError(t, sql(t, r.dsns[i], "WITH a AS (DELETE FROM openctl_records), b AS (DELETE FROM openctl_locks), c AS (DELETE FROM openctl_meta) SELECT 1").Scan(&done))
	return r.stores[i]
}

func TestConformance(t *testing.T) {
	t.Parallel()
	r := newReusedStores(t, 1)
	statetest.RunConformance(t, func(t *testing.T) state.Store { return r.get(t) })
}

func TestRawConformance(t *testing.T) {
	t.Parallel()
	// Stores of one subtest read each other's sealed secrets: they share
	// the passphrase and the key.
	r := newReusedStores(t, 3)
	statetest.RunRawConformance(t, func(t *testing.T) state.RawStore { return r.get(t) })
}

// thing is a record with one secret.
func thing(name, secretValue string) *state.Record {
	return &state.Record{
		APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: name,
		Spec:     map[string]any{"size": int64(1)},
		SpecHash: "h",
		Secrets:  map[string]secret.Secret{"status.kubeconfig": secret.New(secretValue)},
	}
}

// sql runs one statement on dsn directly, outside the Store.
func sql(t *testing.T, dsn, q string, args ...any) pgx.Row {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(t.Context())) })
	return conn.QueryRow(t.Context(), q, args...)
}

func TestSecretsAreSealedInTheTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, dsn := newStore(t)
	const plain = "apiVersion: v1\nclusters: super-secret-kubeconfig-7f3a"
	_, err := s.Put(ctx, thing("plain", plain))
	require.NoError(t, err)

	var row, ciphertext, mac string
	require.NoError(t, sql(t, dsn, "SELECT r::text, secrets_ciphertext, secrets_mac FROM openctl_records r WHERE name = 'plain'").Scan(&row, &ciphertext, &mac))
	assert.NotContains(t, row, "super-secret")
	assert.NotContains(t, row, "kubeconfig-7f3a")
	assert.NotEmpty(t, ciphertext)
	assert.Len(t, mac, 64)
	var key string
	require.NoError(t, sql(t, dsn, "SELECT k::text FROM openctl_key k").Scan(&key))
	assert.NotContains(t, key, "correct horse")
	got, err := s.Get(ctx, thing("plain", "").ID())
	require.NoError(t, err)
	assert.Equal(t, plain, got.Secrets["status.kubeconfig"].Reveal())

	// Tampering with the table: each case alters its own record (one
	// store, one key derivation).
	tests := []struct {
		name   string
		tamper string // $1 is the record's name
	}{
		{"mac altered", "UPDATE openctl_records SET secrets_mac = translate(secrets_mac, '0123456789abcdef', '123456789abcdef0') WHERE name = $1"},
		{"ciphertext altered", "UPDATE openctl_records SET secrets_ciphertext = reverse(secrets_ciphertext) WHERE name = $1"},
		{"moved from another record", "UPDATE openctl_records a SET secrets_ciphertext = b.secrets_ciphertext, secrets_mac = b.secrets_mac FROM openctl_records b WHERE a.name = $1 AND b.name = 'plain'"},
		{"mac removed", "UPDATE openctl_records SET secrets_mac = '' WHERE name = $1"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "t" + strconv.Itoa(i)
			_, err := s.Put(ctx, thing(name, "value-"+name))
			require.NoError(t, err)
			conn, err := pgx.Connect(ctx, dsn)
			require.NoError(t, err)
			tag, err := conn.Exec(ctx, tt.tamper, name)
			require.NoError(t, err)
			require.NoError(t, conn.Close(ctx))
			require.Equal(t, int64(1), tag.RowsAffected())

			_, err = s.Get(ctx, thing(name, "").ID())
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
			var te *seal.TamperedError
			assert.ErrorAs(t, err, &te)
			assert.NotContains(t, err.Error(), "value-")
			_, err = s.List(ctx, state.Filter{})
			assert.True(t, errors.Is(err, errcode.Invalid), "List: got %v", err)
			require.NoError(t, s.Delete(ctx, thing(name, "").ID()))
		})
	}
}

// Not parallel: seal.Derivations counts the whole process's derivations,
// and sequential tests run before the parallel ones.
func TestPassphraseAskedOnceAndOneDerivationPerStore(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Start(t)
	var asked atomic.Int32
	count := func() (secret.Secret, error) { asked.Add(1); return passphrase() }
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: count})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}

	s := open()
	d0 := seal.Derivations()
	_, err := s.Put(ctx, &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "plain"})
	require.NoError(t, err)
	assert.Zero(t, asked.Load(), "no secrets, no passphrase")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := s.Put(ctx, thing("r"+strconv.Itoa(i), "v"))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	_, err = s.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), asked.Load())
	assert.Equal(t, int64(1), seal.Derivations()-d0, "creating the key is the only derivation")

	// Another client unlocks the key once for any number of records.
	s2 := open()
	d1 := seal.Derivations()
	all, err := s2.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Len(t, all, 21)
	for _, r := range all[:5] {
		_, err := s2.Get(ctx, r.ID())
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), seal.Derivations()-d1)
	assert.Equal(t, int32(2), asked.Load())
}

func TestWrongPassphrase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, dsn := newStore(t)
	_, err := s.Put(ctx, thing("a", "v"))
	require.NoError(t, err)

	wrong, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: func() (secret.Secret, error) { return secret.New("wrong"), nil }})
	require.NoError(t, err)
	defer wrong.Close()
	_, err = wrong.Get(ctx, thing("a", "").ID())
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Unauthorized), "got %v", err)
	// A record without secrets needs no passphrase.
	_, err = wrong.Put(ctx, &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "plain"})
	require.NoError(t, err)

	failing, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: func() (secret.Secret, error) {
		return secret.Secret{}, errcode.New(errcode.Invalid, "no passphrase")
	}})
	require.NoError(t, err)
	defer failing.Close()
	_, err = failing.Put(ctx, thing("b", "v"))
	assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
}

func TestValuesRoundTripExactly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	in := &state.Record{
		APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "values",
		Labels: map[string]string{"openctl.io/owner": "x"},
		Spec: map[string]any{
			"int": int64(3), "negative": int64(-5), "maxInt": int64(1<<63 - 1),
			"float": 3.0, "fraction": 0.1, "bigFloat": float64(1 << 60), "huge": 1e300, "tiny": 5e-324,
			"string": "a\"b\\c\u00e9\U0001F600", "bool": true, "null": nil,
			"list":  []any{int64(1), 2.5, "x", []any{}, map[string]any{}},
			"empty": map[string]any{},
		},
		Status: map[string]any{},
	}
	put, err := s.Put(ctx, in)
	require.NoError(t, err)
	got, err := s.Get(ctx, in.ID())
	require.NoError(t, err)
	assert.Equal(t, in.Spec, got.Spec)
	assert.Equal(t, in.Status, got.Status)
	assert.Equal(t, in.Labels, got.Labels)
	assert.Equal(t, put.Spec, got.Spec, "Put returns what Get will")
	assert.True(t, put.UpdatedAt.Equal(got.UpdatedAt))
	assert.True(t, put.CreatedAt.Equal(got.CreatedAt))

	// Values Normalize refuses are an Invalid error naming the field.
	bad := in.Clone()
	bad.Name = "bad"
	bad.Spec = map[string]any{"ch": make(chan int)}
	_, err = s.Put(ctx, bad)
	assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
	// jsonb refuses NUL characters, which the manifest package accepts
	// ("\0" in a double-quoted YAML string): they are stored escaped.
	nul := in.Clone()
	nul.Name = "nul"
	nul.Spec = map[string]any{"nul": "a\x00b", "a\x00b": "nul"}
	_, err = s.Put(ctx, nul)
	require.NoError(t, err)
	got, err = s.Get(ctx, nul.ID())
	require.NoError(t, err)
	assert.Equal(t, nul.Spec, got.Spec)
}

func TestOneResourceAtOneAPIVersion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	v1 := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "a"}
	_, err := s.Put(ctx, v1)
	require.NoError(t, err)
	v2 := &state.Record{APIVersion: "test.openctl.io/v2", Kind: "Thing", Name: "a"}
	_, err = s.Put(ctx, v2)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
	assert.Contains(t, err.Error(), "two apiVersions")
	_, err = s.Get(ctx, v2.ID())
	assert.True(t, errors.Is(err, errcode.NotFound), "got %v", err)
	require.NoError(t, s.Delete(ctx, v2.ID()), "deleting the other version is a no-op")
	_, err = s.Get(ctx, v1.ID())
	require.NoError(t, err)
}

func TestConcurrentMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Start(t)
	const n = 6
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(ctx, dsn, postgres.Options{Passphrase: passphrase}) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		defer stores[i].Close()
	}
	var versions, max int
	require.NoError(t, sql(t, dsn, "SELECT count(*), max(version) FROM openctl_schema_migrations").Scan(&versions, &max))
	assert.Equal(t, postgres.SchemaVersion, versions)
	assert.Equal(t, postgres.SchemaVersion, max)
	// All of them work on the one schema.
	for i, s := range stores {
		_, err := s.Put(ctx, &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "r" + strconv.Itoa(i)})
		require.NoError(t, err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, dsn := newStore(t)
	var ok int
	require.NoError(t, sql(t, dsn, "INSERT INTO openctl_schema_migrations (version, description) VALUES (9999, 'from the future') RETURNING 1").Scan(&ok))
	_, err := postgres.Open(ctx, dsn, postgres.Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
	assert.Contains(t, err.Error(), "9999")
}

func TestOpenUnreachableIsBoundedByContext(t *testing.T) {
	const password = "hunter2-do-not-print"
	// A port nothing listens on: refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := l.Addr().String()
	require.NoError(t, l.Close())
	// A server that accepts and never answers: only the context ends it.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()

	tests := []struct {
		name string
		addr string
	}{
		{"closed port", closedAddr},
		{"silent server", silent.Addr().String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			start := time.Now()
			s, err := postgres.Open(ctx, "postgres://openctl:"+password+"@"+tt.addr+"/state?sslmode=disable", postgres.Options{})
			elapsed := time.Since(start)
			if s != nil {
				s.Close()
			}
			require.Error(t, err)
			assert.Less(t, elapsed, 4*time.Second, "bounded by the 2s context")
			assert.Contains(t, err.Error(), tt.addr)
			assert.NotContains(t, err.Error(), password)
			assert.True(t, errors.Is(err, errcode.Transient), "got %v", err)
		})
	}

	t.Run("no DSN", func(t *testing.T) {
		t.Setenv(postgres.EnvDSN, "")
		_, err := postgres.Open(t.Context(), "", postgres.Options{})
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
		assert.Contains(t, err.Error(), postgres.EnvDSN)
	})
	t.Run("DSN from the environment", func(t *testing.T) {
		t.Setenv(postgres.EnvDSN, "postgres://openctl:"+password+"@"+closedAddr+"/state?sslmode=disable")
		_, err := postgres.Open(t.Context(), "", postgres.Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), closedAddr)
		assert.NotContains(t, err.Error(), password)
	})
	t.Run("malformed DSN", func(t *testing.T) {
		_, err := postgres.Open(t.Context(), "postgres://openctl:"+password+"@127.0.0.1:notaport/state", postgres.Options{})
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
		assert.NotContains(t, err.Error(), password)
	})
}

func TestImportRefusesAnotherKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	_, err := s.Put(ctx, thing("a", "v"))
	require.NoError(t, err)
	other, _, err := seal.NewKey(secret.New("another passphrase"), 0)
	require.NoError(t, err)
	err = s.ImportRaw(ctx, other, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)

	// An empty store takes the imported key, and a Store that sealed with
	// the old key notices instead of mixing keys.
	require.NoError(t, s.Delete(ctx, thing("a", "").ID()))
	require.NoError(t, s.ImportRaw(ctx, other, nil))
	got, err := s.Key(ctx)
	require.NoError(t, err)
	assert.True(t, got.SameKey(other))
	_, err = s.Put(ctx, thing("b", "v"))
	require.Error(t, err, "the store's passphrase does not open the imported key")
	assert.True(t, errors.Is(err, errcode.Unauthorized), "got %v", err)
}

func TestCopyFromFileStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	file, err := state.OpenFile(t.TempDir(), state.FileOptions{Passphrase: passphrase})
	require.NoError(t, err)
	var want []*state.Record
	for _, n := range []string{"a", "b", "c"} {
		r, err := file.Put(ctx, thing(n, "secret-"+n))
		require.NoError(t, err)
		want = append(want, r)
	}
	upd := want[1].Clone()
	upd.SpecHash = "h2"
	want[1], err = file.Put(ctx, upd)
	require.NoError(t, err)

	dsn := pgtest.Start(t)
	var asked atomic.Int32
	pg, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: func() (secret.Secret, error) { asked.Add(1); return passphrase() }})
	require.NoError(t, err)
	defer pg.Close()
	n, err := state.Copy(ctx, file, pg)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Zero(t, asked.Load(), "copying needs no passphrase")
	for _, w := range want {
		got, err := pg.Get(ctx, w.ID())
		require.NoError(t, err)
		assert.Equal(t, w.Generation, got.Generation)
		assert.Equal(t, w.Lineage, got.Lineage)
		assert.Equal(t, w.SpecHash, got.SpecHash)
		assert.Equal(t, w.Secrets["status.kubeconfig"].Reveal(), got.Secrets["status.kubeconfig"].Reveal())
		assert.True(t, w.CreatedAt.Truncate(time.Microsecond).Equal(got.CreatedAt))
	}
	fk, err := file.Key(ctx)
	require.NoError(t, err)
	pk, err := pg.Key(ctx)
	require.NoError(t, err)
	assert.Equal(t, *fk, *pk, "the key is moved verbatim")
}

// A copy read before the record was deleted and recreated has the same
// generation as the new record but another lineage: writing it is stale
// (ABA), not an overwrite of the new record.
func TestPutOfCopyFromBeforeDeleteAndRecreateIsStale(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	rec := func(hash string) *state.Record {
		return &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "a", SpecHash: hash}
	}
	old, err := s.Put(ctx, rec("old"))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, old.ID()))
	recreated, err := s.Put(ctx, rec("new"))
	require.NoError(t, err)
	require.Equal(t, old.Generation, recreated.Generation, "the scenario needs the same generation")
	require.NotEqual(t, old.Lineage, recreated.Lineage)

	stale := old.Clone()
	stale.SpecHash = "stale"
	_, err = s.Put(ctx, stale)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
	assert.Equal(t, errcode.Conflict, errcode.Of(err))
	var ge *state.GenerationError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, int64(1), ge.Expected)
	assert.Equal(t, int64(1), ge.Actual)
	assert.Contains(t, err.Error(), "deleted and recreated")

	got, err := s.Get(ctx, old.ID())
	require.NoError(t, err)
	assert.Equal(t, "new", got.SpecHash, "the recreated record is untouched")
	assert.Equal(t, recreated.Lineage, got.Lineage)
	assert.Equal(t, int64(1), got.Generation)

	// A copy of the recreated record (its lineage) still writes, and so
	// does one without a lineage.
	upd := recreated.Clone()
	upd.SpecHash = "newer"
	upd, err = s.Put(ctx, upd)
	require.NoError(t, err)
	assert.Equal(t, recreated.Lineage, upd.Lineage)
	anon := upd.Clone()
	anon.Lineage = ""
	anon, err = s.Put(ctx, anon)
	require.NoError(t, err)
	assert.Equal(t, recreated.Lineage, anon.Lineage, "a Put without a lineage keeps the stored one")
	assert.Equal(t, int64(3), anon.Generation)
}
