package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
)

var _ state.IdentityAdopter = (*Store)(nil)

// storeIDName is the openctl_meta row holding the store's identity.
const storeIDName = "store_id"

// StoreID returns the database's identity, a row of openctl_meta created
// on first use. Clients that ask a new database at once agree on one: the
// row is inserted unless it exists (the primary key decides), then read.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO openctl_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", storeIDName, state.NewID()); err != nil {
		return "", s.dbErr("creating the store identity", err)
	}
	var id string
	if err := s.pool.QueryRow(ctx, "SELECT value FROM openctl_meta WHERE name = $1", storeIDName).Scan(&id); err != nil {
		return "", s.dbErr("reading the store identity", err)
	}
	if !state.ValidStoreID(id) {
		return "", errcode.New(errcode.Invalid, fmt.Sprintf("postgres: the store identity in %s (openctl_meta) is damaged: %q", s.where, id))
	}
	return id, nil
}

// AdoptStoreID makes id the database's identity (see
// state.IdentityAdopter). It holds a SHARE lock on openctl_records while
// it looks, so no record is written meanwhile.
func (s *Store) AdoptStoreID(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !state.ValidStoreID(id) {
		return errcode.New(errcode.Invalid, fmt.Sprintf("postgres: %q is not a store identity", id))
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.connectErr(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, "LOCK TABLE openctl_records IN SHARE MODE"); err != nil {
		return s.dbErr("locking the records", err)
	}
	var cur string
	err = tx.QueryRow(ctx, "SELECT value FROM openctl_meta WHERE name = $1 FOR UPDATE", storeIDName).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return s.dbErr("reading the store identity", err)
	case cur == id:
		return nil
	default:
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM openctl_records").Scan(&n); err != nil {
			return s.dbErr("counting records", err)
		}
		if n > 0 {
			return errcode.New(errcode.Conflict, fmt.Sprintf("postgres: %s has its own identity %s and holds %d records, whose resources are marked with it; it cannot take identity %s (copy into an empty database instead)", s.where, cur, n, id))
		}
	}
	if _, err := tx.Exec(ctx, "INSERT INTO openctl_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", storeIDName, id); err != nil {
		return s.dbErr("writing the store identity", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.dbErr("writing the store identity", err)
	}
	if cur != "" {
		s.log.Warn("postgres: the store takes another store's identity", "database", s.where, "was", cur, "now", id)
	}
	return nil
}
