package state

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/openctl/openctl/manifest"
)

// Memory is a Store that keeps records in memory, for tests, examples and
// one-shot runs that need no persistence. The zero value is not usable;
// call NewMemory. It is safe for concurrent use.
type Memory struct {
	mu      sync.Mutex              // guards records and locks
	records map[manifest.ID]*Record // owned copies
	locks   map[string]LockInfo     // by scope
	now     func() time.Time        // clock, for tests
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{records: map[manifest.ID]*Record{}, locks: map[string]LockInfo{}}
}

var _ Store = (*Memory)(nil)

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
	if err := rec.ID().Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := rec.ID()
	var cur int64
	old, exists := m.records[id]
	if exists {
		cur = old.Generation
	}
	if rec.Generation != cur {
		return nil, &GenerationError{ID: id, Expected: rec.Generation, Actual: cur}
	}
	c := rec.Clone()
	c.Generation = cur + 1
	now := time.Now().UTC()
	c.UpdatedAt = now
	if exists {
		c.CreatedAt = old.CreatedAt
		if c.Lineage == "" {
			c.Lineage = old.Lineage
		}
	} else {
		if c.CreatedAt.IsZero() {
			c.CreatedAt = now
		}
		if c.Lineage == "" {
			c.Lineage = NewID()
		}
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
