package statetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// RunRawConformance runs the RawStore contract's tests (ExportRaw,
// ImportRaw, Key and state.Copy between two stores of the kind) against
// fresh stores made by newStore. Stores made by one call of newStore must
// be able to read each other's sealed secrets: give them the same
// passphrase (or the same key).
func RunRawConformance(t *testing.T, newStore func(t *testing.T) state.RawStore) {
	t.Helper()
	ctx := t.Context()
	owner := manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Group", Name: "g"}
	fill := func(t *testing.T, s state.Store) map[manifest.ID]*state.Record {
		t.Helper()
		out := map[manifest.ID]*state.Record{}
		for _, n := range []string{"b", "a", "c"} {
			r := &state.Record{
				APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: n,
				Spec:     map[string]any{"n": n, "size": int64(2), "ratio": 2.0},
				SpecHash: "h-" + n,
				Status:   map[string]any{"ok": true},
			}
			if n != "c" {
				r.Secrets = map[string]secret.Secret{"status.token": secret.New("tok-" + n)}
				r.Owner = &owner
			}
			got, err := s.Put(ctx, r)
			require.NoError(t, err)
			if n == "a" { // a second generation
				got.SpecHash = "h-a2"
				got, err = s.Put(ctx, got)
				require.NoError(t, err)
			}
			out[got.ID()] = got
		}
		return out
	}
	same := func(t *testing.T, want, got *state.Record) {
		t.Helper()
		assert.Equal(t, want.ID(), got.ID())
		assert.Equal(t, want.Generation, got.Generation)
		assert.Equal(t, want.Lineage, got.Lineage)
		assert.Equal(t, want.SpecHash, got.SpecHash)
		assert.Equal(t, want.Spec, got.Spec)
		assert.Equal(t, want.Status, got.Status)
		assert.Equal(t, want.Owner, got.Owner)
		assert.True(t, want.CreatedAt.Equal(got.CreatedAt), "createdAt %v != %v", want.CreatedAt, got.CreatedAt)
		assert.True(t, want.UpdatedAt.Equal(got.UpdatedAt), "updatedAt %v != %v", want.UpdatedAt, got.UpdatedAt)
		assert.Equal(t, len(want.Secrets), len(got.Secrets))
		for k, v := range want.Secrets {
			assert.True(t, v.Equal(got.Secrets[k]), "secret %s of %s differs", k, want.ID().Short())
		}
	}

	t.Run("FreshStoreHasNoKey", func(t *testing.T) {
		s := newStore(t)
		raw, err := s.ExportRaw(ctx)
		require.NoError(t, err)
		assert.Empty(t, raw)
		if _, err := s.Key(ctx); err != nil {
			assert.True(t, errors.Is(err, errcode.NotFound), "got %v", err)
		}
	})

	t.Run("ExportSealsAndSorts", func(t *testing.T) {
		s := newStore(t)
		want := fill(t, s)
		raw, err := s.ExportRaw(ctx)
		require.NoError(t, err)
		require.Len(t, raw, len(want))
		for i, rr := range raw {
			if i > 0 {
				assert.Negative(t, raw[i-1].Record.ID().Compare(rr.Record.ID()))
			}
			assert.Nil(t, rr.Record.Secrets, "raw records carry no plaintext")
			assert.Equal(t, len(want[rr.Record.ID()].Secrets) > 0, rr.Sealed != nil, "%s", rr.Record.ID())
			if rr.Sealed != nil {
				assert.NotContains(t, rr.Sealed.Ciphertext, "tok-")
			}
		}
		key, err := s.Key(ctx)
		require.NoError(t, err)
		require.NotNil(t, key)
	})

	t.Run("ImportRoundTrip", func(t *testing.T) {
		src := newStore(t)
		want := fill(t, src)
		raw, err := src.ExportRaw(ctx)
		require.NoError(t, err)
		key, err := src.Key(ctx)
		require.NoError(t, err)
		dst := newStore(t)
		require.NoError(t, dst.ImportRaw(ctx, key, raw))
		for id, w := range want {
			got, err := dst.Get(ctx, id)
			require.NoError(t, err)
			same(t, w, got)
		}
		// The imported generation is the one CAS compares against.
		a := want[manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "a"}]
		stale := a.Clone()
		stale.Generation = 1
		_, err = dst.Put(ctx, stale)
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
		next, err := dst.Put(ctx, a.Clone())
		require.NoError(t, err)
		assert.Equal(t, a.Generation+1, next.Generation)
		assert.Equal(t, a.Lineage, next.Lineage)
	})

	t.Run("ImportRejectsBadRecords", func(t *testing.T) {
		s := newStore(t)
		good := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "x", Generation: 1, Lineage: "l"}
		tests := []struct {
			name string
			mod  func(r *state.Record)
		}{
			{"no generation", func(r *state.Record) { r.Generation = 0 }},
			{"no lineage", func(r *state.Record) { r.Lineage = "" }},
			{"bad name", func(r *state.Record) { r.Name = "Not/A/Name" }},
			{"plaintext secrets", func(r *state.Record) { r.Secrets = map[string]secret.Secret{"k": secret.New("v")} }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := good.Clone()
				tt.mod(r)
				err := s.ImportRaw(ctx, nil, []state.RawRecord{{Record: r}})
				require.Error(t, err)
				assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
			})
		}
		all, err := s.List(ctx, state.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all)
	})

	t.Run("CopyPreservesAndRefusesConflicts", func(t *testing.T) {
		src := newStore(t)
		want := fill(t, src)
		dst := newStore(t)
		n, err := state.Copy(ctx, src, dst)
		require.NoError(t, err)
		assert.Equal(t, len(want), n)
		for id, w := range want {
			got, err := dst.Get(ctx, id)
			require.NoError(t, err)
			same(t, w, got)
		}
		// Copying again is harmless.
		_, err = state.Copy(ctx, src, dst)
		require.NoError(t, err)

		// The target moved on: copying would roll it back.
		b := want[manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "b"}]
		moved := b.Clone()
		moved.SpecHash = "moved"
		_, err = dst.Put(ctx, moved)
		require.NoError(t, err)
		_, err = state.Copy(ctx, src, dst)
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)

		// Another resource with the same ID (another lineage) in a target.
		other := newStore(t)
		clash := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "c", SpecHash: "theirs"}
		_, err = other.Put(ctx, clash)
		require.NoError(t, err)
		_, err = state.Copy(ctx, src, other)
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
		assert.Contains(t, err.Error(), "lineage")
		all, err := other.List(ctx, state.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 1, "nothing copied")
		assert.Equal(t, "theirs", all[0].SpecHash)

		// Both locks are released afterwards.
		for _, s := range []state.Store{src, dst, other} {
			u, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("after-copy"))
			require.NoError(t, err)
			require.NoError(t, u())
		}
	})

	t.Run("CopyRefusesALockedStore", func(t *testing.T) {
		src := newStore(t)
		dst := newStore(t)
		u, err := dst.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
		require.NoError(t, err)
		defer u()
		_, err = state.Copy(ctx, src, dst)
		var le *state.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "apply", le.Holder.Operation)
		// The source's lock was released.
		u2, err := src.Lock(ctx, state.DefaultScope, state.NewLockInfo("x"))
		require.NoError(t, err)
		require.NoError(t, u2())
	})

	t.Run("CopyCarriesIdentity", func(t *testing.T) {
		src, dst := newStore(t), newStore(t)
		srcID, ok1 := src.(state.Identified)
		dstID, ok2 := dst.(state.IdentityAdopter)
		if !ok1 || !ok2 {
			t.Skip("the store has no identity to carry (state.IdentityAdopter)")
		}
		a, err := srcID.StoreID(ctx)
		require.NoError(t, err)
		b, err := dstID.StoreID(ctx)
		require.NoError(t, err)
		require.NotEqual(t, a, b, "two stores have two identities")
		fill(t, src)
		_, err = state.Copy(ctx, src, dst)
		require.NoError(t, err)
		got, err := dstID.StoreID(ctx)
		require.NoError(t, err)
		assert.Equal(t, a, got, "the target manages what the source created: it takes its identity")
		_, err = state.Copy(ctx, src, dst)
		require.NoError(t, err, "copying again is harmless")
	})

	t.Run("CopyRefusesTargetWithIdentityAndRecords", func(t *testing.T) {
		src, dst := newStore(t), newStore(t)
		dstID, ok := dst.(state.IdentityAdopter)
		if _, ok1 := src.(state.Identified); !ok1 || !ok {
			t.Skip("the store has no identity to carry (state.IdentityAdopter)")
		}
		fill(t, src)
		mine := &state.Record{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "mine", SpecHash: "mine"}
		_, err := dst.Put(ctx, mine)
		require.NoError(t, err)
		before, err := dstID.StoreID(ctx)
		require.NoError(t, err)
		_, err = state.Copy(ctx, src, dst)
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
		assert.Contains(t, err.Error(), "identity")
		after, err := dstID.StoreID(ctx)
		require.NoError(t, err)
		assert.Equal(t, before, after, "the target keeps its identity")
		all, err := dst.List(ctx, state.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 1, "nothing copied")
	})
}
