// Package postgres keeps openctl's state in a PostgreSQL database, for
// teams and CI runners that share it. [Store] implements state.Store and
// state.RawStore with the same contract as the file store: Put is a
// compare-and-swap on the record's generation, secrets are sealed with the
// same envelope (package state/seal), and a lock names its holder.
//
//	st, err := postgres.Open(ctx, "", postgres.Options{}) // $OPENCTL_STATE_DSN
//	if err != nil {
//		return err // names host:port, never the password; bounded by ctx
//	}
//	defer st.Close()
//	unlock, err := st.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
//	if err != nil {
//		return err // *state.LockedError: "locked by ci@runner-3 (pid 812, apply, since ...)"
//	}
//	defer unlock()
//
// # Connecting
//
// [Open] takes a DSN in URL form (postgres://user:password@host:5432/db?sslmode=require)
// or key=value form (host=db port=5432 dbname=openctl user=ci); an empty
// DSN means $OPENCTL_STATE_DSN. Anything libpq-style pgx understands
// works, including PGPASSWORD and ~/.pgpass for the password, so it need
// not appear in the DSN. Connecting is bounded by the caller's context: an
// unreachable server is an error naming its host and port when the
// context ends (the password is never part of an error). Every connection
// has TCP keepalives on (30 s idle, then every 10 s, 3 probes), and lock
// connections ask the server for the same (tcp_keepalives_idle,
// tcp_keepalives_interval and tcp_keepalives_count, unless the DSN sets
// them), so that either side notices a vanished peer within about a
// minute.
//
// The store needs a direct connection or a pooler in session mode: its
// locks are session-level advisory locks, which transaction-mode poolers
// (PgBouncer's pool_mode=transaction) do not support.
//
// # Schema and migrations
//
// Open creates the tables on first use and migrates them when a newer
// openctl adds a step; the role needs CREATE on the schema the first time
// (PostgreSQL 15 grants it on "public" only to the database owner). Tables
// go in the first schema of the role's search_path:
//
//   - openctl_schema_migrations: one row per applied migration (version,
//     description, applied_at). Migrations run in one transaction under a
//     transaction-level advisory lock, so clients opening a new database
//     at the same time apply each step exactly once. A database migrated
//     by a newer openctl (a version above [SchemaVersion]) is refused.
//   - openctl_records: one row per resource, keyed by provider, kind and
//     name (one resource lives at one apiVersion, as in the file store):
//     apiversion, labels, spec and status (jsonb), spec_hash, owner and
//     children (jsonb), the sealed secrets (secrets_ciphertext,
//     secrets_mac; NULL without secrets), generation, lineage, created_at
//     and updated_at.
//   - openctl_key: the one row of the sealed data key (seal.KeyFile's
//     fields), created from the passphrase by the first Put with secrets.
//   - openctl_locks: one row per held lock scope: the holder's lock id,
//     who, host, pid, operation and start time, and its PostgreSQL
//     backend pid.
//   - openctl_meta: name/value rows; "store_id" holds the database's
//     identity (state.Identified), inserted by the first StoreID (ON
//     CONFLICT DO NOTHING, so concurrent clients agree on one).
//     state.Copy carries the source's identity into an empty database.
//
// Spec and status are jsonb; the few values jsonb cannot hold exactly
// (strings with NUL or bytes that are not UTF-8, -0.0) are stored behind
// an escape mark (U+E000) and read back as written.
//
// Put is a single conditional statement — INSERT ... ON CONFLICT DO
// NOTHING for generation 0, UPDATE ... WHERE generation = $expected (and
// lineage = $lineage, so a copy read before the record was deleted and
// recreated is stale even at the same generation) otherwise — so
// concurrent writers on any number of hosts get a *state.GenerationError
// (errcode.Conflict), never a lost update. The
// write also checks, holding the key row FOR SHARE, that the key that
// sealed the record's secrets is still the store's key.
//
// # Secrets
//
// Secrets are sealed exactly as the file store seals them: the random data
// key sealed with the passphrase (PBKDF2-SHA256, 600,000 iterations) in
// openctl_key, each record's secrets encrypted with the data key in
// secrets_ciphertext and bound to the record's ID by secrets_mac, which is
// verified before decryption (a mismatch is a *seal.TamperedError,
// errcode.Invalid). The plaintext never reaches the database. A Store
// asks for the passphrase (Options.Passphrase, by default
// $OPENCTL_STATE_PASSPHRASE or $OPENCTL_STATE_PASSPHRASE_FILE) at most
// once, the first time it seals or opens a secret, and derives the key
// once: listing 1,000 sealed records costs one derivation. The openssl
// break-glass recovery of package seal works on the values of the key row
// and a record's secrets_ciphertext. state.Copy moves state from the file
// store (or another database) verbatim through [Store.ExportRaw] and
// [Store.ImportRaw]: no passphrase is needed and the same passphrase opens
// the copy.
//
// # Locks
//
// Lock opens a connection of its own (not from the pool) and takes
// pg_try_advisory_lock on a 64-bit hash of the scope in that session, then
// writes the lock-info row. It never waits: if another session holds the
// lock, Lock reads the row and returns a *state.LockedError
// (errcode.Conflict) with the holder's who, host, pid, operation and start
// time. (It checks in pg_locks that the row belongs to the session holding
// the lock; a row left by an earlier holder is not reported as the
// holder's.) unlock deletes the row, releases the advisory lock and
// closes the connection. If the lock was lost while held — its connection
// broke, or ForceUnlock ended its session — another client may have held
// it meanwhile, and unlock returns an errcode.Conflict error saying so.
//
// The lock lives as long as the holder's session. A holder process that
// exits or is killed closes its connection and the server releases the
// lock at once; a holder whose host vanishes is dropped when the server's
// keepalive probes fail, within about a minute. Its info row stays behind,
// harmless: the next Lock overwrites it. Nobody needs to break such a
// lock by hand. [Store.ForceUnlock] exists for a holder that is alive but
// stuck: it terminates the holding session (pg_terminate_backend, which
// needs the holder's role, pg_signal_backend or superuser), waits until
// the lock is released, and deletes that holder's row (not one a new
// holder wrote meanwhile); the CLI exposes it as
// openctl state force-unlock. Like the file store's, it refuses to break
// the lock of a holder that is a process of this host that still runs
// (state.HolderRunning) unless state.ForceUnlockOptions.Force is set
// (openctl state force-unlock --force).
//
// # Tests
//
// The tests run against a real PostgreSQL server that they start
// themselves with package pgtest (initdb and postgres from
// /usr/lib/postgresql/<version>/bin in a temporary directory on a free
// loopback port, as the "postgres" user when run as root; stopped and
// removed when the tests end). Each test gets its own database. Under CI
// (CI=true) a missing PostgreSQL fails the tests; elsewhere they are
// skipped with a loud message. $OPENCTL_TEST_POSTGRES_DSN points them at
// an existing server instead.
package postgres
