package postgres

import (
	"context"

	"github.com/openctl/openctl/state"
)

// Backend is the state.Backend of the PostgreSQL store, serving the
// "postgres" and "postgresql" schemes (postgres://user@host:5432/db).
// state.Backends also hands it libpq key=value DSNs ("host=db
// dbname=openctl"), which have no scheme. Its Open is [Open]; the store
// it returns is a *Store, which the caller closes (io.Closer). A Backend
// is safe for concurrent use.
//
//	var stores state.Backends
//	if err := stores.Register(state.FileBackend{}, postgres.Backend{}); err != nil { ... }
type Backend struct{}

var _ state.Backend = Backend{}

// Schemes returns "postgres" and "postgresql".
func (Backend) Schemes() []string { return []string{"postgres", "postgresql"} }

// Open connects to the database dsn names with Open (an empty dsn means
// $OPENCTL_STATE_DSN), bounded by ctx.
func (Backend) Open(ctx context.Context, dsn string, opts state.OpenOptions) (state.Store, error) {
	st, err := Open(ctx, dsn, Options{Passphrase: opts.Passphrase, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return st, nil
}
