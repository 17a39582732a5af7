package state

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

// Memory is a Store that keeps records in memory, for tests, examples and
// one-shot runs that need no persistence. The zero value is not usable;
// call NewMemory. It is safe for concurrent use.
//
// Memory keeps secrets in plaintext (they live in this process anyway). It
// is also a [RawStore], so that [Copy] can move state into or out of it:
// ExportRaw seals the secrets, and ImportRaw opens them, with a data key
// unlocked by the passphrase (see [MemoryPassphrase]), asked for at most
// once and only when a record with secrets is exported or imported.
// ExportRaw creates the key the first time it needs one; ImportRaw adopts
// the imported key.
//
// Its identity (StoreID) is random, made by NewMemory, and lives as long
// as the store.
type Memory struct {
	mu      sync.Mutex              // guards records, locks and id
	records map[manifest.ID]*Record // owned copies
	locks   map[string]LockInfo     // by scope
	id      string                  // StoreID: random, made by NewMemory

	keyMu      sync.Mutex                    // guards key; taken before mu, never after
	key        *seal.KeyFile                 // the key ExportRaw seals with, nil until needed
	keys       *seal.Unlocker                // unlocks key
	passphrase func() (secret.Secret, error) // from MemoryPassphrase
}

// MemoryOption configures a Memory store.
type MemoryOption func(*Memory)

// MemoryPassphrase sets the function that returns the passphrase sealing
// the key the store uses for RawStore (ExportRaw, ImportRaw). It is called
// at most once, when a record with secrets is first exported or imported.
// Without this option the store uses seal.Passphrase
// (OPENCTL_STATE_PASSPHRASE, OPENCTL_STATE_PASSPHRASE_FILE).
func MemoryPassphrase(f func() (secret.Secret, error)) MemoryOption {
	return func(m *Memory) { m.passphrase = f }
}

// MemoryKey gives the store a data key to start with, instead of one it
// would create (a passphrase derivation) when it first needs one: kf is
// the key sealed with the passphrase and ring the same key unlocked, as
// [seal.NewKey] or [seal.KeyFile.Unlock] return them. The store seals
// with it and, since ring is already unlocked, derives nothing — for a
// program that makes many short-lived stores on one key, such as a test
// suite or a runner planning many manifests in memory. A ring that does
// not match kf (or a nil one) is not used: the passphrase then unlocks kf.
// A nil kf leaves the store to create its key.
func MemoryKey(kf *seal.KeyFile, ring *seal.Keyring) MemoryOption {
	return func(m *Memory) {
		if kf != nil {
			m.useKey(kf, ring)
		}
	}
}

// NewMemory returns an empty in-memory store.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{records: map[manifest.ID]*Record{}, locks: map[string]LockInfo{}, id: NewID()}
	// The passphrase is read when first needed, so that MemoryPassphrase
	// may come in opts after MemoryKey.
	m.keys = seal.NewUnlocker(func() (secret.Secret, error) {
		if m.passphrase == nil {
			return seal.Passphrase()
		}
		return m.passphrase()
	})
	for _, o := range opts {
		o(m)
	}
	return m
}

// useKey makes kf the store's key and remembers ring, its unlocked key.
// The caller holds keyMu or is NewMemory.
func (m *Memory) useKey(kf *seal.KeyFile, ring *seal.Keyring) {
	c := *kf
	m.key = &c
	if ring != nil {
		m.keys.Add(ring)
	}
}

var (
	_ RawStore        = (*Memory)(nil)
	_ IdentityAdopter = (*Memory)(nil)
)

// Get returns a copy of the record for id.
func (m *Memory) Get(ctx context.Context, id manifest.ID) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[id]
	if !ok {
		return nil, NotFoundError(id)
	}
	return r.Clone(), nil
}

// Put stores a copy of rec if rec.Generation matches (see Store).
func (m *Memory) Put(ctx context.Context, rec *Record) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, errcode.New(errcode.Invalid, "state: Put of a nil record")
	}
	if err := rec.ID().Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := rec.ID()
	var prev *version
	if old, ok := m.records[id]; ok {
		prev = &version{old.Generation, old.CreatedAt, old.Lineage}
	}
	c := rec.Clone()
	if err := c.advance(prev); err != nil {
		return nil, err
	}
	m.records[id] = c
	return c.Clone(), nil
}

// Delete removes the record for id, if any.
func (m *Memory) Delete(ctx context.Context, id manifest.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, id)
	return nil
}

// List returns copies of the matching records sorted by ID.
func (m *Memory) List(ctx context.Context, f Filter) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Record, 0, len(m.records))
	for _, r := range m.records {
		if f.Match(r) {
			out = append(out, r.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *Record) int { return a.ID().Compare(b.ID()) })
	return out, nil
}

// Lock takes the lock on scope, or returns a *LockedError naming the holder.
func (m *Memory) Lock(ctx context.Context, scope string, info LockInfo) (func() error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, held := m.locks[scope]; held {
		return nil, &LockedError{Scope: scope, Holder: h}
	}
	if info.ID == "" {
		info.ID = NewID()
	}
	info.Scope = scope
	m.locks[scope] = info
	var once sync.Once
	return func() error {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.locks[scope].ID == info.ID {
				delete(m.locks, scope)
			}
		})
		return nil
	}, nil
}

// Key returns the key ExportRaw seals with, or an error matching
// errcode.NotFound if none was created or imported yet.
func (m *Memory) Key(ctx context.Context) (*seal.KeyFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	if m.key == nil {
		return nil, errcode.New(errcode.NotFound, "state: the memory store has no key yet")
	}
	c := *m.key
	return &c, nil
}

// ExportRaw returns every record sorted by ID with its secrets sealed,
// creating the store's key first if it has none and a record has secrets.
func (m *Memory) ExportRaw(ctx context.Context) ([]RawRecord, error) {
	recs, err := m.List(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	var ring *seal.Keyring
	out := make([]RawRecord, len(recs))
	for i, r := range recs {
		out[i] = RawRecord{Record: r}
		if len(r.Secrets) == 0 {
			r.Secrets = nil
			continue
		}
		if ring == nil {
			if ring, err = m.sealingKey(); err != nil {
				return nil, err
			}
		}
		if out[i].Sealed, err = ring.Seal(r.ID(), r.Secrets); err != nil {
			return nil, fmt.Errorf("state: sealing the secrets of %s: %w", r.ID().Short(), err)
		}
		r.Secrets = nil
	}
	return out, nil
}

// sealingKey returns the unlocked key, creating it if the store has none.
// m.keyMu must be held.
func (m *Memory) sealingKey() (*seal.Keyring, error) {
	if m.key != nil {
		ring, err := m.keys.Unlock(m.key)
		if err != nil {
			return nil, fmt.Errorf("state: unlocking the memory store's key: %w", err)
		}
		return ring, nil
	}
	kf, ring, err := m.keys.Create()
	if err != nil {
		return nil, fmt.Errorf("state: creating the memory store's key: %w", err)
	}
	m.key = kf
	return ring, nil
}

// ImportRaw opens the records' secrets with key and stores the records as
// given (see RawStore), replacing records with the same ID.
func (m *Memory) ImportRaw(ctx context.Context, key *seal.KeyFile, recs []RawRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	if key != nil && m.key != nil && !m.key.SameKey(key) {
		m.mu.Lock()
		n := len(m.records)
		m.mu.Unlock()
		if n > 0 {
			return errcode.New(errcode.Conflict, fmt.Sprintf("state: import: the memory store holds %d records sealed with another key", n))
		}
	}
	var ring *seal.Keyring
	opened := make([]*Record, len(recs))
	for i, rr := range recs {
		if err := checkRaw(rr); err != nil {
			return err
		}
		r := rr.Record.Clone()
		if rr.Sealed != nil {
			if key == nil {
				return errcode.New(errcode.Invalid, fmt.Sprintf("state: import: %s has sealed secrets but no key was given", r.ID().Short()))
			}
			if ring == nil {
				var err error
				if ring, err = m.keys.Unlock(key); err != nil {
					return fmt.Errorf("state: import: unlocking the imported key: %w", err)
				}
			}
			sec, err := ring.Open(r.ID(), rr.Sealed)
			if err != nil {
				return fmt.Errorf("state: import: %w", err)
			}
			r.Secrets = sec
		}
		opened[i] = r
	}
	if key != nil {
		c := *key
		m.key = &c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range opened {
		m.records[r.ID()] = r
	}
	return nil
}

// checkRaw validates a record to import: a valid ID, a generation, a
// lineage, and no plaintext secrets.
func checkRaw(rr RawRecord) error {
	r := rr.Record
	if r == nil {
		return errcode.New(errcode.Invalid, "state: import: a raw record without its record")
	}
	if err := r.ID().Validate(); err != nil {
		return fmt.Errorf("state: import: %w", err)
	}
	switch {
	case r.Generation < 1:
		return errcode.New(errcode.Invalid, fmt.Sprintf("state: import: %s has generation %d, want 1 or more", r.ID().Short(), r.Generation))
	case r.Lineage == "":
		return errcode.New(errcode.Invalid, fmt.Sprintf("state: import: %s has no lineage", r.ID().Short()))
	case r.Secrets != nil:
		return errcode.New(errcode.Invalid, fmt.Sprintf("state: import: %s carries plaintext secrets; raw records carry them sealed", r.ID().Short()))
	}
	return nil
}
