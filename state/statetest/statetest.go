package statetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// RunConformance runs the Store contract's tests against fresh stores made
// by newStore (called once per subtest).
func RunConformance(t *testing.T, newStore func(t *testing.T) state.Store) {
	t.Helper()
	ctx := t.Context()
	rec := func(name string) *state.Record {
		return &state.Record{
			APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: name,
			Labels:   map[string]string{"app": "x"},
			Spec:     map[string]any{"size": int64(3), "list": []any{"a", map[string]any{"b": true}}},
			SpecHash: "h1",
			Status:   map[string]any{"ip": "10.0.0.1"},
			Secrets:  map[string]secret.Secret{"status.token": secret.New("s3cret")},
		}
	}

	t.Run("GetMissingIsNotFound", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Get(ctx, rec("a").ID())
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.NotFound), "got %v", err)
	})

	t.Run("PutThenGet", func(t *testing.T) {
		s := newStore(t)
		in := rec("a")
		in.Owner = &manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Group", Name: "g"}
		in.Children = []manifest.ID{{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "c"}}
		stored, err := s.Put(ctx, in)
		require.NoError(t, err)
		assert.Equal(t, int64(1), stored.Generation)
		assert.NotEmpty(t, stored.Lineage)
		assert.False(t, stored.UpdatedAt.IsZero())
		got, err := s.Get(ctx, in.ID())
		require.NoError(t, err)
		assert.Equal(t, in.Spec, got.Spec)
		assert.Equal(t, in.Status, got.Status)
		assert.Equal(t, in.Labels, got.Labels)
		assert.Equal(t, in.Secrets, got.Secrets)
		assert.Equal(t, in.Owner, got.Owner)
		assert.Equal(t, in.Children, got.Children)
		assert.Equal(t, "h1", got.SpecHash)
		assert.Equal(t, stored.Lineage, got.Lineage)
		assert.Equal(t, int64(1), got.Generation)
	})

	t.Run("PutIsCompareAndSwap", func(t *testing.T) {
		s := newStore(t)
		first, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		// A second create (generation 0) is stale.
		_, err = s.Put(ctx, rec("a"))
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
		var ge *state.GenerationError
		require.ErrorAs(t, err, &ge)
		assert.Equal(t, int64(1), ge.Actual)

		upd := first.Clone()
		upd.SpecHash = "h2"
		second, err := s.Put(ctx, upd)
		require.NoError(t, err)
		assert.Equal(t, int64(2), second.Generation)
		assert.Equal(t, first.Lineage, second.Lineage)
		// Writing again from the generation-1 copy is stale.
		_, err = s.Put(ctx, upd)
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
		got, err := s.Get(ctx, upd.ID())
		require.NoError(t, err)
		assert.Equal(t, "h2", got.SpecHash)
	})

	t.Run("ConcurrentPutsOneWinner", func(t *testing.T) {
		s := newStore(t)
		base, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := base.Clone()
				r.SpecHash = fmt.Sprint("writer-", i)
				if _, err := s.Put(ctx, r); err == nil {
					wins.Add(1)
				} else if !errors.Is(err, errcode.Conflict) {
					t.Errorf("unexpected error: %v", err)
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load())
	})

	t.Run("ReturnedRecordsAreCopies", func(t *testing.T) {
		s := newStore(t)
		in := rec("a")
		_, err := s.Put(ctx, in)
		require.NoError(t, err)
		in.Spec["size"] = int64(99)
		got, err := s.Get(ctx, in.ID())
		require.NoError(t, err)
		assert.Equal(t, int64(3), got.Spec["size"])
		got.Status["ip"] = "changed"
		again, err := s.Get(ctx, in.ID())
		require.NoError(t, err)
		assert.Equal(t, "10.0.0.1", again.Status["ip"])
	})

	t.Run("StalePutAfterDeleteAndRecreate", func(t *testing.T) {
		s := newStore(t)
		old, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, old.ID()))
		recreated := rec("a")
		recreated.SpecHash = "recreated"
		now, err := s.Put(ctx, recreated)
		require.NoError(t, err)
		require.Equal(t, old.Generation, now.Generation, "same generation, another record")
		stale := old.Clone()
		stale.SpecHash = "stale"
		_, err = s.Put(ctx, stale)
		require.Error(t, err, "a writer holding the deleted record must not overwrite the new one")
		assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
		var ge *state.GenerationError
		assert.ErrorAs(t, err, &ge)
		got, err := s.Get(ctx, old.ID())
		require.NoError(t, err)
		assert.Equal(t, "recreated", got.SpecHash)
		assert.Equal(t, now.Lineage, got.Lineage)
	})

	t.Run("DeleteMissingIsNotAnError", func(t *testing.T) {
		s := newStore(t)
		require.NoError(t, s.Delete(ctx, rec("nope").ID()))
		_, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, rec("a").ID()))
		_, err = s.Get(ctx, rec("a").ID())
		assert.True(t, errors.Is(err, errcode.NotFound))
		// Recreating after delete starts again at generation 1.
		r, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		assert.Equal(t, int64(1), r.Generation)
	})

	t.Run("ListSortedAndFiltered", func(t *testing.T) {
		s := newStore(t)
		owner := manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Group", Name: "g"}
		for _, n := range []string{"c", "a", "b"} {
			r := rec(n)
			if n != "a" {
				r.Owner = &owner
			}
			_, err := s.Put(ctx, r)
			require.NoError(t, err)
		}
		other := rec("z")
		other.APIVersion = "other.openctl.io/v1"
		_, err := s.Put(ctx, other)
		require.NoError(t, err)

		all, err := s.List(ctx, state.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 4)
		for i := 1; i < len(all); i++ {
			assert.Negative(t, all[i-1].ID().Compare(all[i].ID()))
		}
		byProv, err := s.List(ctx, state.Filter{Group: "test.openctl.io"})
		require.NoError(t, err)
		assert.Len(t, byProv, 3)
		owned, err := s.List(ctx, state.Filter{Owner: &owner})
		require.NoError(t, err)
		require.Len(t, owned, 2)
		assert.Equal(t, "b", owned[0].Name)
		assert.Equal(t, "c", owned[1].Name)
	})

	t.Run("LockIsExclusiveAndNamesHolder", func(t *testing.T) {
		s := newStore(t)
		info := state.NewLockInfo("apply")
		unlock, err := s.Lock(ctx, state.DefaultScope, info)
		require.NoError(t, err)
		_, err = s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Conflict))
		var le *state.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "apply", le.Holder.Operation)
		assert.Equal(t, info.PID, le.Holder.PID)
		assert.Contains(t, err.Error(), "apply")

		// Another scope is independent.
		u2, err := s.Lock(ctx, "other", state.NewLockInfo("apply"))
		require.NoError(t, err)
		require.NoError(t, u2())

		require.NoError(t, unlock())
		require.NoError(t, unlock(), "unlock twice is harmless")
		u3, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
		require.NoError(t, err)
		require.NoError(t, u3())
	})

	t.Run("ConcurrentLockOneWinner", func(t *testing.T) {
		s := newStore(t)
		var wins atomic.Int32
		var wg sync.WaitGroup
		unlocks := make(chan func() error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
				if err == nil {
					wins.Add(1)
					unlocks <- u
				}
			}()
		}
		wg.Wait()
		close(unlocks)
		assert.Equal(t, int32(1), wins.Load())
		for u := range unlocks {
			require.NoError(t, u())
		}
	})

	t.Run("RecordWithoutSecrets", func(t *testing.T) {
		s := newStore(t)
		in := rec("plain")
		in.Secrets = nil
		_, err := s.Put(ctx, in)
		require.NoError(t, err)
		got, err := s.Get(ctx, in.ID())
		require.NoError(t, err)
		assert.Empty(t, got.Secrets)
		all, err := s.List(ctx, state.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 1)
		assert.Empty(t, all[0].Secrets)
	})

	t.Run("SecretsReplacedOnUpdate", func(t *testing.T) {
		s := newStore(t)
		first, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		upd := first.Clone()
		upd.Secrets = map[string]secret.Secret{"status.kubeconfig": secret.New("kc"), "status.token": secret.New("t2")}
		_, err = s.Put(ctx, upd)
		require.NoError(t, err)
		got, err := s.Get(ctx, upd.ID())
		require.NoError(t, err)
		assert.Equal(t, upd.Secrets, got.Secrets)
		none := got.Clone()
		none.Secrets = nil
		_, err = s.Put(ctx, none)
		require.NoError(t, err)
		got, err = s.Get(ctx, upd.ID())
		require.NoError(t, err)
		assert.Empty(t, got.Secrets)
	})

	t.Run("PutNilIsInvalid", func(t *testing.T) {
		s := newStore(t)
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("Put(nil) panicked: %v", p)
				}
			}()
			_, err = s.Put(ctx, nil)
		}()
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
	})

	t.Run("StoreIDStable", func(t *testing.T) {
		s := newStore(t)
		ider, ok := s.(state.Identified)
		if !ok {
			t.Skip("the store has no identity (state.Identified)")
		}
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				id, err := ider.StoreID(ctx)
				assert.NoError(t, err)
				ids[i] = id
			})
		}
		wg.Wait()
		require.True(t, state.ValidStoreID(ids[0]), "identity %q", ids[0])
		for _, id := range ids {
			assert.Equal(t, ids[0], id, "every caller gets the same identity")
		}
		_, err := s.Put(ctx, rec("a"))
		require.NoError(t, err)
		again, err := ider.StoreID(ctx)
		require.NoError(t, err)
		assert.Equal(t, ids[0], again, "writing records keeps the identity")
	})

	t.Run("ValuesKeptExactly", func(t *testing.T) {
		s := newStore(t)
		RoundTrip(ctx, t, s, "tricky", TrickyValues())
		for i, str := range TrickyStrings {
			RoundTrip(ctx, t, s, fmt.Sprintf("s%d", i), map[string]any{"v": str, str: []any{str}})
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.Get(cctx, rec("a").ID())
		assert.Error(t, err)
		_, err = s.Put(cctx, rec("a"))
		assert.Error(t, err)
	})
}
