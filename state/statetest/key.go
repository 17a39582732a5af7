package statetest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

// sharedKey is one key made by Key.
type sharedKey struct {
	kf   *seal.KeyFile
	ring *seal.Keyring
	err  error
}

var (
	keysMu sync.Mutex
	keys   = map[string]func() sharedKey{}
)

// Key returns a data key sealed with passphrase as stores make it
// ([seal.DefaultIterations]) and the same key unlocked, made once per
// test binary and passphrase: a passphrase derivation takes 0.2 s (2 s
// under -race), too much for every store a suite makes. Hand it to a
// memory store with [state.MemoryKey].
func Key(tb testing.TB, passphrase string) (*seal.KeyFile, *seal.Keyring) {
	tb.Helper()
	keysMu.Lock()
	get, ok := keys[passphrase]
	if !ok {
		get = sync.OnceValue(func() sharedKey {
			kf, ring, err := seal.NewKey(secret.New(passphrase), 0)
			return sharedKey{kf, ring, err}
		})
		keys[passphrase] = get
	}
	keysMu.Unlock()
	k := get()
	require.NoError(tb, k.err)
	return k.kf, k.ring
}
