package config

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
)

// StoreOptions are what OpenStoreWith passes on to the store.
type StoreOptions struct {
	// Passphrase returns the passphrase that seals the store's secrets,
	// asked for at most once, when a record with secrets is first read or
	// written. Nil means seal.Passphrase: $OPENCTL_STATE_PASSPHRASE, else
	// the file $OPENCTL_STATE_PASSPHRASE_FILE names.
	Passphrase func() (secret.Secret, error)
	// Logger receives the store's warnings; nil discards them.
	Logger *slog.Logger
}

// OpenStore opens the state store the configuration names; it is
// OpenStoreWith(ctx, StoreOptions{}).
func (c *Config) OpenStore(ctx context.Context) (state.Store, func() error, error) {
	return c.OpenStoreWith(ctx, StoreOptions{})
}

// OpenStoreWith opens the state store the configuration names and returns
// it with the function that releases it. The file backend opens
// StateDir with state.OpenFile; the postgres backend connects to State.DSN
// with postgres.Open, bounded by ctx (an empty DSN means
// $OPENCTL_STATE_DSN as postgres.Open reads it). Errors are those of the
// stores (errcode.Invalid, errcode.Unauthorized, errcode.Transient) and
// never hold the DSN's password.
func (c *Config) OpenStoreWith(ctx context.Context, opts StoreOptions) (state.Store, func() error, error) {
	switch b := c.StateBackend(); b {
	case BackendFile:
		dir, err := c.StateDir()
		if err != nil {
			return nil, nil, err
		}
		st, err := state.OpenFile(dir, state.FileOptions{Passphrase: opts.Passphrase, Logger: opts.Logger})
		if err != nil {
			return nil, nil, err
		}
		return st, func() error { return nil }, nil
	case BackendPostgres:
		st, err := postgres.Open(ctx, c.State.DSN.Reveal(), postgres.Options{Passphrase: opts.Passphrase, Logger: opts.Logger})
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	default:
		return nil, nil, c.errAt(c.Path, "state.backend", fmt.Sprintf("want %s or %s, got %s", BackendFile, BackendPostgres, quote(b)))
	}
}

// StateDir returns the file backend's directory: State.Dir, else "state"
// under $OPENCTL_HOME as LoadEnv saw it, else state.DefaultDir.
func (c *Config) StateDir() (string, error) {
	switch {
	case c.State.Dir != "":
		return c.State.Dir, nil
	case c.meta.home != "":
		return filepath.Join(c.meta.home, "state"), nil
	default:
		return state.DefaultDir()
	}
}
