package state

import (
	"context"

	"github.com/openctl/openctl/state/seal"
)

// Sealer is implemented by stores that seal secrets with a data key of
// their own (FileStore, Memory, the PostgreSQL store): Keyring returns
// that key unlocked, creating it (with the passphrase) if the store has
// none yet, exactly as Unlocker's Unlock does. Callers seal and open
// values of their own with it — a saved plan's secret fields — and derive
// keys bound to the store from it ([seal.Keyring.Sum]), which nobody
// without the passphrase can compute. A missing passphrase is an
// errcode.Invalid error, a wrong one errcode.Unauthorized.
type Sealer interface {
	Keyring(ctx context.Context) (*seal.Keyring, error)
}

var (
	_ Sealer = (*FileStore)(nil)
	_ Sealer = (*Memory)(nil)
)

// Keyring returns the store's unlocked data key, creating and saving it
// if the store has none (see [Sealer]).
func (s *FileStore) Keyring(ctx context.Context) (*seal.Keyring, error) {
	release, err := s.lockRecords(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.sealingKey()
}

// Keyring returns the store's unlocked data key — the one ExportRaw seals
// with — creating it if the store has none (see [Sealer]). It needs the
// passphrase (see [MemoryPassphrase]).
func (m *Memory) Keyring(ctx context.Context) (*seal.Keyring, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.keyMu.Lock()
	defer m.keyMu.Unlock()
	return m.sealingKey()
}
