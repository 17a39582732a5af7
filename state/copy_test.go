package state_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
	"github.com/openctl/openctl/state/statetest"
)

func newKeyedMemory(t *testing.T) *state.Memory {
	t.Helper()
	m := state.NewMemory(state.MemoryPassphrase(passphrase))
	kf, ring := testKey(t)
	require.NoError(t, state.UseKeyForTest(m, kf, ring))
	return m
}

func TestMemoryRawConformance(t *testing.T) {
	statetest.RunRawConformance(t, func(t *testing.T) state.RawStore { return newKeyedMemory(t) })
}

// fillCopySource writes n records, some with secrets, an owner and
// children, each at generation 1 or 2.
func fillCopySource(t *testing.T, s state.Store, n int) map[manifest.ID]*state.Record {
	t.Helper()
	ctx := t.Context()
	owner := manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Group", Name: "g"}
	out := map[manifest.ID]*state.Record{}
	for i := range n {
		r := &state.Record{
			APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: fmt.Sprint("r", i),
			Spec:     map[string]any{"i": int64(i)},
			SpecHash: fmt.Sprint("h", i),
			Owner:    &owner,
			Children: []manifest.ID{{APIVersion: "test.openctl.io/v1", Kind: "Part", Name: fmt.Sprint("p", i)}},
		}
		if i%3 != 0 {
			r.Secrets = map[string]secret.Secret{"status.kubeconfig": secret.New(fmt.Sprint("kubeconfig-", i))}
		}
		got, err := s.Put(ctx, r)
		require.NoError(t, err)
		if i%2 == 0 {
			got.SpecHash += "-2"
			got, err = s.Put(ctx, got)
			require.NoError(t, err)
		}
		out[got.ID()] = got
	}
	return out
}

func assertCopied(t *testing.T, want map[manifest.ID]*state.Record, got []*state.Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for _, g := range got {
		w := want[g.ID()]
		require.NotNil(t, w, g.ID().String())
		assert.Equal(t, w.Generation, g.Generation, g.Name)
		assert.Equal(t, w.Lineage, g.Lineage, g.Name)
		assert.Equal(t, w.SpecHash, g.SpecHash, g.Name)
		assert.Equal(t, w.Owner, g.Owner, g.Name)
		assert.Equal(t, w.Children, g.Children, g.Name)
		assert.True(t, w.CreatedAt.Equal(g.CreatedAt), g.Name)
		assert.True(t, w.UpdatedAt.Equal(g.UpdatedAt), g.Name)
		assert.Equal(t, w.Secrets, g.Secrets, g.Name)
	}
}

func TestCopyBetweenStoreKinds(t *testing.T) {
	tests := []struct {
		name     string
		from, to func(t *testing.T) state.RawStore
	}{
		{"file to memory", func(t *testing.T) state.RawStore { return newFileStore(t) }, func(t *testing.T) state.RawStore { return newKeyedMemory(t) }},
		{"memory to file", func(t *testing.T) state.RawStore { return newKeyedMemory(t) }, func(t *testing.T) state.RawStore { return newFileStore(t) }},
		{"file to file", func(t *testing.T) state.RawStore { return newFileStore(t) }, func(t *testing.T) state.RawStore { return newFileStore(t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			from, to := tt.from(t), tt.to(t)
			want := fillCopySource(t, from, 12)
			n, err := state.Copy(ctx, from, to)
			require.NoError(t, err)
			assert.Equal(t, 12, n)
			got, err := to.List(ctx, state.Filter{})
			require.NoError(t, err)
			assertCopied(t, want, got)
		})
	}
}

// TestCopyToFreshFileStore copies sealed state into a store that never saw
// the key: no passphrase is needed to copy, and the target then opens all
// the records with the source's passphrase and a single derivation.
func TestCopyToFreshFileStore(t *testing.T) {
	ctx := t.Context()
	from := newFileStore(t)
	want := fillCopySource(t, from, 30)
	var calls atomic.Int32
	dir := filepath.Join(t.TempDir(), "copy")
	to, err := state.OpenFile(dir, state.FileOptions{Passphrase: countingPassphrase(testPassphrase, &calls)})
	require.NoError(t, err)
	before := seal.Derivations()
	n, err := state.Copy(ctx, from, to)
	require.NoError(t, err)
	assert.Equal(t, 30, n)
	assert.Zero(t, calls.Load(), "copying needs no passphrase")
	assert.Zero(t, seal.Derivations()-before)

	fromKey, err := from.Key(ctx)
	require.NoError(t, err)
	toKey, err := to.Key(ctx)
	require.NoError(t, err)
	assert.True(t, fromKey.SameKey(toKey))

	got, err := to.List(ctx, state.Filter{})
	require.NoError(t, err)
	assertCopied(t, want, got)
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, int64(1), seal.Derivations()-before, "one derivation opens every record")
}

// TestImportRefusesAnotherKey: a store holding records sealed with one key
// cannot take records sealed with another.
func TestImportRefusesAnotherKey(t *testing.T) {
	ctx := t.Context()
	otherKey, otherRing, err := seal.NewKey(secret.New(testPassphrase), 0)
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		new  func(t *testing.T) state.RawStore
	}{
		{"file", func(t *testing.T) state.RawStore { return newFileStore(t) }},
		{"memory", func(t *testing.T) state.RawStore { return newKeyedMemory(t) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.new(t)
			require.NoError(t, state.UseKeyForTest(src, otherKey, otherRing))
			fillCopySource(t, src, 3)

			dst := tt.new(t)
			// dst knows both keys unlocked but seals with the shared one.
			kf, ring := testKey(t)
			require.NoError(t, state.UseKeyForTest(dst, otherKey, otherRing))
			require.NoError(t, state.UseKeyForTest(dst, kf, ring))
			// The same identity (an earlier copy), so that the key is
			// what differs.
			id, err := src.(state.Identified).StoreID(ctx)
			require.NoError(t, err)
			require.NoError(t, dst.(state.IdentityAdopter).AdoptStoreID(ctx, id))
			_, err = dst.Put(ctx, thing("mine"))
			require.NoError(t, err)
			_, err = state.Copy(ctx, src, dst)
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
			assert.Contains(t, err.Error(), "another key")
			all, err := dst.List(ctx, state.Filter{})
			require.NoError(t, err)
			require.Len(t, all, 1, "nothing imported")

			// An empty store adopts the new key.
			require.NoError(t, dst.Delete(ctx, thing("mine").ID()))
			n, err := state.Copy(ctx, src, dst)
			require.NoError(t, err)
			assert.Equal(t, 3, n)
			key, err := dst.Key(ctx)
			require.NoError(t, err)
			assert.True(t, key.SameKey(otherKey))
			got, err := dst.Get(ctx, manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "r1"})
			require.NoError(t, err)
			assert.Equal(t, "kubeconfig-1", got.Secrets["status.kubeconfig"].Reveal())
		})
	}
}

func TestCopySameStoreIsLocked(t *testing.T) {
	s := newFileStore(t)
	_, err := state.Copy(t.Context(), s, s)
	var le *state.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "copy", le.Holder.Operation)
}

func TestMemoryExportCreatesKeyOnce(t *testing.T) {
	// Without a key, a memory store creates one on the first export of a
	// secret (this test reuses the shared key's passphrase derivation
	// budget: memory export with a fresh key costs one derivation, which
	// TestImportRefusesAnotherKey and the others avoid).
	ctx := t.Context()
	m := newKeyedMemory(t)
	_, err := m.Put(ctx, thing("a"))
	require.NoError(t, err)
	before := seal.Derivations()
	for range 3 {
		raw, err := m.ExportRaw(ctx)
		require.NoError(t, err)
		require.Len(t, raw, 1)
		require.NotNil(t, raw[0].Sealed)
	}
	assert.Zero(t, seal.Derivations()-before)
}
