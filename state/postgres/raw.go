package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// ExportRaw returns every record with its secrets sealed as stored, sorted
// by ID. It needs no passphrase.
func (s *Store) ExportRaw(ctx context.Context) ([]state.RawRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.readRows(ctx, "SELECT "+recordColumns+" FROM openctl_records")
	if err != nil {
		return nil, err
	}
	out := make([]state.RawRecord, len(rows))
	for i, rw := range rows {
		out[i] = state.RawRecord{Record: rw.rec, Sealed: rw.sealed}
	}
	return out, nil
}

// ImportRaw stores key unless the database has one, and writes recs
// verbatim (generation, lineage, timestamps and sealed secrets as given),
// replacing records with the same ID, all in one transaction. A database
// sealed with a different key is refused (errcode.Conflict) if it holds
// any record, and takes key if it holds none. It needs no passphrase.
func (s *Store) ImportRaw(ctx context.Context, key *seal.KeyFile, recs []state.RawRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key != nil {
		if err := key.Validate(); err != nil {
			return fmt.Errorf("postgres: import: %w", err)
		}
	}
	for _, r := range recs {
		if r.Record == nil {
			return errcode.New(errcode.Invalid, "postgres: import: a nil record")
		}
		id := r.Record.ID()
		if err := id.Validate(); err != nil {
			return fmt.Errorf("postgres: import: %w", err)
		}
		if r.Record.Generation < 1 || r.Record.Lineage == "" {
			return errcode.New(errcode.Invalid, fmt.Sprintf("postgres: import: %s has generation %d and lineage %q; imported records need a generation of at least 1 and a lineage", id.Short(), r.Record.Generation, r.Record.Lineage))
		}
		if r.Sealed != nil && key == nil {
			return errcode.New(errcode.Invalid, fmt.Sprintf("postgres: import: %s has sealed secrets but no key was given", id.Short()))
		}
		if len(r.Record.Secrets) > 0 {
			return errcode.New(errcode.Invalid, fmt.Sprintf("postgres: import: %s carries unsealed secrets; raw records hold them only sealed", id.Short()))
		}
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.connectErr(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if key != nil {
		if err := s.importKey(ctx, tx, key); err != nil {
			return err
		}
	}
	b := &pgx.Batch{}
	for _, r := range recs {
		rec := r.Record
		c, err := encode(rec, r.Sealed, "")
		if err != nil {
			return fmt.Errorf("%w (record %s)", err, rec.ID().Short())
		}
		id := rec.ID()
		b.Queue(`INSERT INTO openctl_records (apiversion, kind, name, provider, labels, spec, spec_hash, status, owner, children,
	secrets_ciphertext, secrets_mac, generation, lineage, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (provider, kind, name) DO UPDATE SET labels = EXCLUDED.labels, spec = EXCLUDED.spec,
	spec_hash = EXCLUDED.spec_hash, status = EXCLUDED.status, owner = EXCLUDED.owner, children = EXCLUDED.children,
	secrets_ciphertext = EXCLUDED.secrets_ciphertext, secrets_mac = EXCLUDED.secrets_mac, generation = EXCLUDED.generation,
	lineage = EXCLUDED.lineage, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at
WHERE openctl_records.apiversion = EXCLUDED.apiversion`,
			id.APIVersion, id.Kind, id.Name, state.GroupKey(id.Group()), c.labels, c.spec, rec.SpecHash, c.status, c.owner, c.children,
			c.ciphertext, c.mac, rec.Generation, rec.Lineage, rec.CreatedAt.UTC(), rec.UpdatedAt.UTC())
	}
	br := tx.SendBatch(ctx, b)
	for _, r := range recs {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return s.dbErr("import: writing "+r.Record.ID().Short(), err)
		}
		if tag.RowsAffected() != 1 {
			_ = br.Close()
			return errcode.New(errcode.Conflict, fmt.Sprintf("postgres: import: %s: the database holds %s/%s at another apiVersion; one resource cannot be kept at two apiVersions", r.Record.ID(), r.Record.Kind, r.Record.Name))
		}
	}
	if err := br.Close(); err != nil {
		return s.dbErr("import: writing records", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.dbErr("import: committing", err)
	}
	return nil
}

// importKey makes key the database's key inside tx, if allowed. The key
// row stays locked until tx ends, so no Put seals with a key being
// replaced.
func (s *Store) importKey(ctx context.Context, tx pgx.Tx, key *seal.KeyFile) error {
	for range 2 {
		cur, err := s.readKey(ctx, tx, "FOR UPDATE")
		switch {
		case errors.Is(err, errcode.NotFound):
			inserted, err := s.insertKey(ctx, tx, key)
			if err != nil {
				return err
			}
			if inserted {
				return nil
			}
			continue // another client stored a key meanwhile: compare with it
		case err != nil:
			return err
		case cur.SameKey(key):
			return nil // keep this database's sealing of the same data key
		}
		var n int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM openctl_records").Scan(&n); err != nil {
			return s.dbErr("import: counting records", err)
		}
		if n > 0 {
			return errcode.New(errcode.Conflict, fmt.Sprintf("postgres: import: %s is sealed with another key and holds %d records; import into an empty database, or one created from the same state", s.where, n))
		}
		if _, err := tx.Exec(ctx, `UPDATE openctl_key SET version = $1, kdf = $2, iterations = $3, cipher = $4, sealed_key = $5, key_check = $6, created_at = now() WHERE id = 1`,
			key.Version, key.KDF, key.Iterations, key.Cipher, key.SealedKey, key.Check); err != nil {
			return s.dbErr("import: replacing the state key", err)
		}
		return nil
	}
	return errcode.New(errcode.Internal, "postgres: import: the state key in "+s.where+" keeps changing")
}
