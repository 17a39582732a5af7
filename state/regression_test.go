package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
)

func reviewPass() (secret.Secret, error) { return secret.New("correct horse"), nil }

func reviewID(n string) manifest.ID {
	return manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: n}
}

// Missing key file makes Get look like NotFound.
func TestMissingKeyFileIsNotNotFound(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := OpenFile(dir, FileOptions{Passphrase: reviewPass})
	require.NoError(t, err)
	_, err = s.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "a", Secrets: map[string]secret.Secret{"x": secret.New("y")}})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "key.yaml")))
	s2, _ := OpenFile(dir, FileOptions{Passphrase: reviewPass})
	_, err = s2.Get(ctx, reviewID("a"))
	require.Error(t, err)
	require.False(t, errcode.Is(err, errcode.NotFound), "the record exists: the engine must not take it for absent")
	require.Equal(t, errcode.Invalid, errcode.Of(err))
	require.Contains(t, err.Error(), "no key file")
}

// ABA: stale writer overwrites a recreated record.
func testABA(t *testing.T, s Store) {
	ctx := t.Context()
	old, err := s.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "a", SpecHash: "old"})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, reviewID("a")))
	nw, err := s.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "a", SpecHash: "new"})
	require.NoError(t, err)
	stale := old.Clone()
	stale.SpecHash = "stale-write"
	_, err = s.Put(ctx, stale)
	require.Error(t, err, "a stale writer of a deleted and recreated record gets CONFLICT")
	require.True(t, errcode.Is(err, errcode.Conflict))
	var ge *GenerationError
	require.ErrorAs(t, err, &ge)
	require.True(t, ge.Recreated)
	got, err := s.Get(ctx, reviewID("a"))
	require.NoError(t, err)
	require.Equal(t, nw.Lineage, got.Lineage)
	require.Equal(t, "new", got.SpecHash)
}
func TestStalePutAfterRecreateMemory(t *testing.T) { testABA(t, NewMemory()) }
func TestStalePutAfterRecreateFile(t *testing.T) {
	s, err := OpenFile(t.TempDir(), FileOptions{Passphrase: reviewPass})
	require.NoError(t, err)
	testABA(t, s)
}

// List racing Delete fails with a spurious error.
func TestListDuringConcurrentDelete(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := OpenFile(dir, FileOptions{Passphrase: reviewPass})
	require.NoError(t, err)
	s2, err := OpenFile(dir, FileOptions{Passphrase: reviewPass})
	require.NoError(t, err)
	var fails int
	var firstErr error
	for round := 0; round < 3 && fails == 0; round++ {
		for i := 0; i < 100; i++ {
			_, err := s.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: fmt.Sprintf("r%d", i)})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; i < 100; i++ {
				_ = s2.Delete(ctx, reviewID(fmt.Sprintf("r%d", i)))
			}
		})
		for k := 0; k < 20; k++ {
			if _, err := s.List(ctx, Filter{}); err != nil {
				fails++
				firstErr = err
			}
		}
		wg.Wait()
	}
	require.Zero(t, fails, "List failed during concurrent Delete: %v (code %s)", firstErr, errcode.Of(firstErr))
}

// Copy from a Memory store with secrets that was never exported.
func TestCopyFromFreshMemory(t *testing.T) {
	ctx := t.Context()
	m := NewMemory(MemoryPassphrase(reviewPass))
	_, err := m.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "a", Secrets: map[string]secret.Secret{"x": secret.New("y")}})
	require.NoError(t, err)
	f, err := OpenFile(t.TempDir(), FileOptions{Passphrase: reviewPass})
	require.NoError(t, err)
	n, err := Copy(ctx, m, f)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err := f.Get(ctx, reviewID("a"))
	require.NoError(t, err)
	require.Equal(t, "y", got.Secrets["x"].Reveal())
}

// Two FileStores in one process: CAS exclusion holds.
func TestTwoFileStoresOneProcess(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	a, _ := OpenFile(dir, FileOptions{Passphrase: reviewPass})
	b, _ := OpenFile(dir, FileOptions{Passphrase: reviewPass})
	_, err := a.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "c"})
	require.NoError(t, err)
	var wins, conflicts int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			_, err := st.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "c", Generation: 1})
			mu.Lock()
			defer mu.Unlock()
			var ge *GenerationError
			if err == nil {
				wins++
			} else if errors.As(err, &ge) {
				conflicts++
			} else {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, wins)
	un, err := a.Lock(ctx, "default", NewLockInfo("x"))
	require.NoError(t, err)
	_, err = b.Lock(ctx, "default", NewLockInfo("y"))
	require.True(t, errcode.Is(err, errcode.Conflict))
	require.NoError(t, un())
}

// Copy file->file where the target holds the same group/kind/name at another apiVersion.
func TestCopyRefusesOtherAPIVersion(t *testing.T) {
	ctx := t.Context()
	src, _ := OpenFile(t.TempDir(), FileOptions{Passphrase: reviewPass})
	dst, _ := OpenFile(t.TempDir(), FileOptions{Passphrase: reviewPass})
	_, err := src.Put(ctx, &Record{APIVersion: "demo.openctl.io/v2", Kind: "Vm", Name: "a", SpecHash: "src"})
	require.NoError(t, err)
	_, err = dst.Put(ctx, &Record{APIVersion: "demo.openctl.io/v1", Kind: "Vm", Name: "a", SpecHash: "dst"})
	require.NoError(t, err)
	_, err = Copy(ctx, src, dst)
	require.Error(t, err, "Copy must not replace the target's v1 record")
	require.True(t, errcode.Is(err, errcode.Conflict))
	got, err := dst.Get(ctx, reviewID("a"))
	require.NoError(t, err)
	require.Equal(t, "dst", got.SpecHash)
}
