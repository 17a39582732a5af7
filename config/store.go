package config

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/openctl/openctl/errcode"
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

// OpenStoreAt opens the state store a location names — "file:DIR" (or
// "file://DIR") for a file store, a PostgreSQL DSN (postgres://…,
// postgresql://… or "host=… dbname=…") for a PostgreSQL store — and
// returns it with the function that releases it; it is how state is
// migrated between stores (state.Copy). A location that is neither is an
// errcode.Invalid error that shows it with its password masked.
func OpenStoreAt(ctx context.Context, location string, opts StoreOptions) (state.Store, func() error, error) {
	switch {
	case strings.HasPrefix(location, "file:"):
		dir := strings.TrimPrefix(strings.TrimPrefix(location, "file:"), "//")
		if dir == "" {
			return nil, nil, errcode.New(errcode.Invalid, fmt.Sprintf("config: %q: want file:DIR", location))
		}
		st, err := state.OpenFile(dir, state.FileOptions{Passphrase: opts.Passphrase, Logger: opts.Logger})
		if err != nil {
			return nil, nil, err
		}
		return st, func() error { return nil }, nil
	case strings.HasPrefix(location, "postgres://"), strings.HasPrefix(location, "postgresql://"), strings.Contains(location, "="):
		st, err := postgres.Open(ctx, location, postgres.Options{Passphrase: opts.Passphrase, Logger: opts.Logger})
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	return nil, nil, errcode.New(errcode.Invalid, fmt.Sprintf("config: cannot tell what store %q is: want a PostgreSQL DSN (postgres://user@host:5432/db or host=... dbname=...) or file:DIR", MaskDSN(location)))
}

var kvPassword = regexp.MustCompile(`(password\s*=\s*)('[^']*'|\S+)`)

// MaskDSN returns a PostgreSQL DSN (URL or key=value form) with any
// password replaced by "xxxxx", for messages.
func MaskDSN(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "<a DSN that does not parse>"
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}
