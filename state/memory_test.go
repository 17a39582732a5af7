package state_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
	"github.com/openctl/openctl/state/statetest"
)

func TestMemoryConformance(t *testing.T) {
	statetest.RunConformance(t, func(t *testing.T) state.Store { return state.NewMemory() })
}

// TestMemoryKey: a memory store given a key seals with it and, its
// keyring being unlocked already, never asks for the passphrase nor
// derives — whichever order the options come in.
func TestMemoryKey(t *testing.T) {
	kf, ring := testKey(t)
	var calls atomic.Int32
	m := state.NewMemory(state.MemoryKey(kf, ring), state.MemoryPassphrase(countingPassphrase(testPassphrase, &calls)))
	before := seal.Derivations()
	got, err := m.Keyring(t.Context())
	require.NoError(t, err)
	assert.Same(t, ring, got)
	key, err := m.Key(t.Context())
	require.NoError(t, err)
	assert.True(t, key.SameKey(kf))
	assert.Zero(t, calls.Load(), "no passphrase asked")
	assert.Zero(t, seal.Derivations()-before)
}
