package postgres

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/openctl/openctl/errcode"
)

// migration is one step of the schema. Steps are applied in order, each
// once, and recorded in openctl_schema_migrations. A released step is never
// edited; changes come as new steps.
type migration struct {
	version     int
	description string
	sql         string
}

// migrations is the schema's history.
var migrations = []migration{
	{1, "records, sealed key and lock information", `
CREATE TABLE openctl_records (
	provider           text        NOT NULL,
	kind               text        NOT NULL,
	name               text        NOT NULL,
	apiversion         text        NOT NULL,
	labels             jsonb,
	spec               jsonb,
	spec_hash          text        NOT NULL DEFAULT '',
	status             jsonb,
	owner              jsonb,
	children           jsonb,
	secrets_ciphertext text,
	secrets_mac        text,
	generation         bigint      NOT NULL CHECK (generation > 0),
	lineage            text        NOT NULL,
	created_at         timestamptz NOT NULL,
	updated_at         timestamptz NOT NULL,
	PRIMARY KEY (provider, kind, name),
	CHECK ((secrets_ciphertext IS NULL) = (secrets_mac IS NULL))
);
CREATE INDEX openctl_records_owner ON openctl_records (owner) WHERE owner IS NOT NULL;

CREATE TABLE openctl_key (
	id         integer     PRIMARY KEY CHECK (id = 1),
	version    integer     NOT NULL,
	kdf        text        NOT NULL,
	iterations integer     NOT NULL,
	cipher     text        NOT NULL,
	sealed_key text        NOT NULL,
	key_check  text        NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE openctl_locks (
	scope       text        PRIMARY KEY,
	lock_id     text        NOT NULL,
	who         text        NOT NULL,
	host        text        NOT NULL,
	pid         integer     NOT NULL,
	operation   text        NOT NULL,
	created     timestamptz NOT NULL,
	backend_pid integer     NOT NULL
);
`},
	{2, "store metadata: the store's identity", `
CREATE TABLE openctl_meta (
	name  text PRIMARY KEY,
	value text NOT NULL
);
`},
}

// SchemaVersion is the schema version this package creates and reads: the
// version of the last migration.
const SchemaVersion = 2

// advisoryKey maps a name to a 64-bit advisory lock key (FNV-1a), in a
// namespace of openctl's own so that other users of advisory locks in the
// same database do not collide with it.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("openctl\x00"))
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// migrationKey is the advisory lock that serialises migrations.
var migrationKey = advisoryKey("schema-migrations")

// migrate brings the schema to SchemaVersion. It runs in one transaction
// under a transaction-scoped advisory lock, so concurrent Opens of a new
// database migrate it once and a failed step leaves nothing behind.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.connectErr(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationKey); err != nil {
		return s.dbErr("waiting for the schema migration lock", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS openctl_schema_migrations (
	version     integer     PRIMARY KEY,
	description text        NOT NULL,
	applied_at  timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return s.dbErr("creating openctl_schema_migrations", err)
	}
	var cur int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM openctl_schema_migrations").Scan(&cur); err != nil {
		return s.dbErr("reading the schema version", err)
	}
	if cur > SchemaVersion {
		return errcode.New(errcode.Invalid, fmt.Sprintf("postgres: the state database %s has schema version %d, newer than this openctl knows (%d): upgrade openctl", s.where, cur, SchemaVersion))
	}
	if cur == SchemaVersion {
		return nil // nothing to commit
	}
	for _, m := range migrations {
		if m.version <= cur {
			continue
		}
		// No arguments: the simple protocol, which runs several statements.
		if _, err := tx.Exec(ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			return s.dbErr(fmt.Sprintf("applying schema migration %d (%s)", m.version, m.description), err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO openctl_schema_migrations (version, description) VALUES ($1, $2)", m.version, m.description); err != nil {
			return s.dbErr("recording schema migration", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.dbErr("committing the schema migration", err)
	}
	return nil
}
