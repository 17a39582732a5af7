package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state/seal"
)

// keyring unlocks or creates the store's data key. It asks for the
// passphrase at most once in the Store's life (remembering the answer or
// the failure) and keeps the unlocked key, so a Store runs one passphrase
// derivation however many records it seals and opens. It is safe for
// concurrent use.
type keyring struct {
	store    *Store
	unlocker *seal.Unlocker // asks for the passphrase at most once, remembers keys

	mu   sync.Mutex    // guards ring; held across a key creation
	ring *seal.Keyring // the key last unlocked or created
}

// get returns the keyring for the key stored in the database and the key's
// Check. With create, a database without a key gets a new one sealed with
// the passphrase; without, a missing key is an error (sealed secrets
// without a key).
func (k *keyring) get(ctx context.Context, create bool) (*seal.Keyring, string, error) {
	// The key row is read every time (one indexed row): another client may
	// have created it, or replaced it in a store that had no records.
	kf, err := k.store.Key(ctx)
	if errors.Is(err, errcode.NotFound) {
		if !create {
			return nil, "", errcode.New(errcode.Invalid, "postgres: the state database "+k.store.where+" holds sealed secrets but no key (openctl_key is empty)")
		}
		return k.create(ctx)
	}
	if err != nil {
		return nil, "", err
	}
	r, err := k.unlock(kf)
	if err != nil {
		return nil, "", err
	}
	return r, kf.Check, nil
}

// unlock returns the data key sealed in kf, running the passphrase
// derivation only if no key matching kf was unlocked before.
func (k *keyring) unlock(kf *seal.KeyFile) (*seal.Keyring, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.unlockLocked(kf)
}

// unlockLocked is unlock with k.mu held.
func (k *keyring) unlockLocked(kf *seal.KeyFile) (*seal.Keyring, error) {
	r, err := k.unlocker.Unlock(kf)
	if err != nil {
		return nil, err
	}
	k.ring = r
	return r, nil
}

// create makes a new data key and stores it, unless another client stored
// one first; then that one is unlocked instead. Concurrent callers in this
// Store wait for the first, which makes the only new key.
func (k *keyring) create(ctx context.Context) (*seal.Keyring, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for range 2 {
		kf, err := k.store.Key(ctx)
		if err == nil {
			r, err := k.unlockLocked(kf)
			if err != nil {
				return nil, "", err
			}
			return r, kf.Check, nil
		}
		if !errors.Is(err, errcode.NotFound) {
			return nil, "", err
		}
		kf, r, err := k.unlocker.Create()
		if err != nil {
			return nil, "", err
		}
		inserted, err := k.store.insertKey(ctx, k.store.pool, kf)
		if err != nil {
			return nil, "", err
		}
		if inserted {
			k.ring = r
			return r, kf.Check, nil
		}
		// Another client stored a key first: use that one.
	}
	return nil, "", errcode.New(errcode.Internal, "postgres: the state key in "+k.store.where+" keeps disappearing")
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// insertKey stores kf unless the database has a key; it reports whether
// kf was stored.
func (s *Store) insertKey(ctx context.Context, q querier, kf *seal.KeyFile) (bool, error) {
	tag, err := q.Exec(ctx, `INSERT INTO openctl_key (id, version, kdf, iterations, cipher, sealed_key, key_check)
VALUES (1, $1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		kf.Version, kf.KDF, kf.Iterations, kf.Cipher, kf.SealedKey, kf.Check)
	if err != nil {
		return false, s.dbErr("storing the state key", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Key returns the store's sealed data key, or an error matching
// errcode.NotFound if no record with secrets was ever written. A key row
// that fails validation is an errcode.Invalid error.
func (s *Store) Key(ctx context.Context) (*seal.KeyFile, error) {
	return s.readKey(ctx, s.pool, "")
}

// readKey reads the key row; suffix is appended to the query ("FOR
// UPDATE").
func (s *Store) readKey(ctx context.Context, q querier, suffix string) (*seal.KeyFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var kf seal.KeyFile
	err := q.QueryRow(ctx, "SELECT version, kdf, iterations, cipher, sealed_key, key_check FROM openctl_key WHERE id = 1 "+suffix).
		Scan(&kf.Version, &kf.KDF, &kf.Iterations, &kf.Cipher, &kf.SealedKey, &kf.Check)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errcode.New(errcode.NotFound, "postgres: the state database "+s.where+" has no key yet")
	}
	if err != nil {
		return nil, s.dbErr("reading the state key", err)
	}
	if err := kf.Validate(); err != nil {
		return nil, fmt.Errorf("postgres: the state key in %s (table openctl_key): %w", s.where, err)
	}
	return &kf, nil
}

// Unlock makes sure the store can seal and open secrets (see
// state.Unlocker): it unlocks the database's data key, creating it if
// the database has none.
func (s *Store) Unlock(ctx context.Context) error {
	_, _, err := s.keys.get(ctx, true)
	return err
}

// Keyring returns the database's unlocked data key, creating it if the
// database has none (see state.Sealer).
func (s *Store) Keyring(ctx context.Context) (*seal.Keyring, error) {
	r, _, err := s.keys.get(ctx, true)
	return r, err
}
