package state_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/internal/testenv"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
	"github.com/openctl/openctl/state/statetest"
)

const testPassphrase = "correct horse battery staple"

// testKey is the one data key most tests use (see statetest.Key).
func testKey(tb testing.TB) (*seal.KeyFile, *seal.Keyring) {
	tb.Helper()
	return statetest.Key(tb, testPassphrase)
}

func passphrase() (secret.Secret, error) { return secret.New(testPassphrase), nil }

// countingPassphrase returns a passphrase function that counts its calls.
func countingPassphrase(pass string, calls *atomic.Int32) func() (secret.Secret, error) {
	return func() (secret.Secret, error) {
		calls.Add(1)
		return secret.New(pass), nil
	}
}

// openFile opens a file store in dir that already holds the shared key,
// unlocked.
func openFile(tb testing.TB, dir string) *state.FileStore {
	tb.Helper()
	s, err := state.OpenFile(dir, state.FileOptions{Passphrase: passphrase})
	require.NoError(tb, err)
	kf, ring := testKey(tb)
	require.NoError(tb, state.UseKeyForTest(s, kf, ring))
	return s
}

func newFileStore(tb testing.TB) *state.FileStore {
	tb.Helper()
	return openFile(tb, filepath.Join(tb.TempDir(), "state"))
}

func TestFileStoreConformance(t *testing.T) {
	statetest.RunConformance(t, func(t *testing.T) state.Store { return newFileStore(t) })
}

func TestFileStoreRawConformance(t *testing.T) {
	statetest.RunRawConformance(t, func(t *testing.T) state.RawStore { return newFileStore(t) })
}

func TestFileStoreSharedDirectoryCAS(t *testing.T) {
	// Two stores on one directory stand for two processes: each has its
	// own flock file descriptions.
	dir := filepath.Join(t.TempDir(), "state")
	stores := []*state.FileStore{openFile(t, dir), openFile(t, dir)}
	base, err := stores[0].Put(t.Context(), thing("a"))
	require.NoError(t, err)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			r := base.Clone()
			r.SpecHash = fmt.Sprint("writer-", i)
			_, err := stores[i%2].Put(t.Context(), r)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, errcode.Conflict):
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), wins.Load())
}

func thing(name string) *state.Record {
	return &state.Record{
		APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: name,
		Spec:     map[string]any{"size": int64(1)},
		SpecHash: "h",
		Secrets:  map[string]secret.Secret{"status.token": secret.New("tok-" + name)},
	}
}

func recordPath(s *state.FileStore, name string) string {
	return filepath.Join(s.Dir(), "test", "Thing", name+".yaml")
}

func TestFileStoreLayoutAndModes(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	_, err := s.Put(ctx, thing("a"))
	require.NoError(t, err)
	u, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	defer u()

	for _, f := range []string{recordPath(s, "a"), filepath.Join(s.Dir(), "key.yaml"), filepath.Join(s.Dir(), "locks", "default.lock")} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), f)
	}
	seen := 0
	require.NoError(t, filepath.WalkDir(s.Dir(), func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		st, err := d.Info()
		require.NoError(t, err)
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		assert.Equal(t, want, st.Mode().Perm(), p)
		seen++
		return nil
	}))
	assert.GreaterOrEqual(t, seen, 8)

	data, err := os.ReadFile(recordPath(s, "a"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "tok-a", "secrets never reach the disk in plaintext")
	assert.Contains(t, string(data), "ciphertext:")
	assert.Contains(t, string(data), "mac:")
}

func TestOpenFileDirectoryModes(t *testing.T) {
	tests := []struct {
		name    string
		mode    fs.FileMode
		wantErr bool
		warn    bool
	}{
		{"private", 0o700, false, false},
		{"group readable", 0o750, false, true},
		{"world writable", 0o777, true, false},
		{"group writable", 0o770, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tt.mode))
			var logs bytes.Buffer
			_, err := state.OpenFile(dir, state.FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if tt.wantErr {
				require.Error(t, err)
				assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
				assert.Contains(t, err.Error(), dir)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.warn, strings.Contains(logs.String(), "readable"), logs.String())
		})
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("OPENCTL_HOME", "/opt/oc")
	d, err := state.DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, "/opt/oc/state", d)
	t.Setenv("OPENCTL_HOME", "")
	t.Setenv("HOME", "/home/u")
	d, err = state.DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.openctl/state", d)
}

// resum replaces a record file's checksum line with one matching body.
func resum(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(append([]byte{}, body...), []byte("checksum: sha256:"+hex.EncodeToString(sum[:])+"\n")...)
}

// body returns a record file's contents without its checksum line.
func body(t *testing.T, data []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(data, []byte("checksum: sha256:"))
	require.Positive(t, i)
	return data[:i]
}

func TestFileStoreCorruptFiles(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		mod  func(t *testing.T, data []byte) []byte
		want string
	}{
		{"empty", func(*testing.T, []byte) []byte { return nil }, "empty"},
		{"truncated mid-file", func(_ *testing.T, d []byte) []byte { return d[:len(d)/2] }, "truncated"},
		{"truncated before the checksum", func(t *testing.T, d []byte) []byte { return body(t, d) }, "truncated"},
		{"truncated inside the checksum", func(_ *testing.T, d []byte) []byte { return d[:len(d)-10] }, "truncated"},
		{"a byte changed", func(_ *testing.T, d []byte) []byte {
			d = bytes.Clone(d)
			d[bytes.Index(d, []byte("specHash: h"))+10] = 'X'
			return d
		}, "checksum mismatch"},
		{"not YAML", func(*testing.T, []byte) []byte { return resum([]byte("::: [not yaml\n")) }, "corrupt"},
		{"unknown field", func(t *testing.T, d []byte) []byte { return resum(append(body(t, d), "surprise: 1\n"...)) }, "surprise"},
		{"no generation", func(t *testing.T, d []byte) []byte {
			return resum(bytes.Replace(body(t, d), []byte("generation: 1"), []byte("generation: 0"), 1))
		}, "generation 0"},
		{"another record", func(t *testing.T, d []byte) []byte {
			return resum(bytes.Replace(body(t, d), []byte("name: a"), []byte("name: b"), 1))
		}, "holds test.openctl.io/v1/Thing/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFileStore(t)
			_, err := s.Put(ctx, thing("a"))
			require.NoError(t, err)
			path := recordPath(s, "a")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tt.mod(t, data), 0o600))

			_, err = s.Get(ctx, thing("a").ID())
			require.Error(t, err, "a damaged file is never absent")
			assert.False(t, errors.Is(err, errcode.NotFound), "got %v", err)
			assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tt.want)

			_, err = s.List(ctx, state.Filter{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)

			_, err = s.Put(ctx, thing("a"))
			require.Error(t, err, "Put never overwrites a file it cannot read")
			assert.Contains(t, err.Error(), path)

			require.NoError(t, s.Delete(ctx, thing("a").ID()), "a damaged record can be deleted")
			_, err = s.Get(ctx, thing("a").ID())
			assert.True(t, errors.Is(err, errcode.NotFound), "got %v", err)
		})
	}
}

func TestFileStoreUnreadableFile(t *testing.T) {
	// Root reads files whatever their mode: as root the check runs in a
	// child process as nobody.
	testenv.RunUnprivileged(t, func(t *testing.T) {
		s := newFileStore(t)
		_, err := s.Put(t.Context(), thing("a"))
		require.NoError(t, err)
		require.NoError(t, os.Chmod(recordPath(s, "a"), 0))
		_, err = s.Get(t.Context(), thing("a").ID())
		require.Error(t, err)
		assert.False(t, errors.Is(err, errcode.NotFound))
		assert.True(t, errors.Is(err, fs.ErrPermission), "got %v", err)
		assert.Contains(t, err.Error(), recordPath(s, "a"))
	})
}

func TestFileStoreIgnoresForeignFiles(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	_, err := s.Put(ctx, thing("a"))
	require.NoError(t, err)
	dir := filepath.Dir(recordPath(s, "a"))
	for _, f := range []string{".a.yaml.tmp", ".b.yaml.tmp", "README", "notes.json", ".hidden.yaml"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("half a rec"), 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir(), ".trash"), 0o700))
	all, err := s.List(ctx, state.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	// A leftover temporary file of a record is overwritten by its next
	// write and removed by Delete.
	next := all[0].Clone()
	next.SpecHash = "h2"
	_, err = s.Put(ctx, next)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, next.ID()))
	_, err = os.Stat(filepath.Join(dir, ".a.yaml.tmp"))
	assert.True(t, errors.Is(err, fs.ErrNotExist), "got %v", err)
}

func TestFileStoreListFilterReadsOnlyMatchingDirectories(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	_, err := s.Put(ctx, thing("a"))
	require.NoError(t, err)
	other := thing("z")
	other.APIVersion = "other.openctl.io/v1"
	_, err = s.Put(ctx, other)
	require.NoError(t, err)
	// A damaged file of another provider does not disturb a filtered List.
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), "other", "Thing", "z.yaml"), []byte("junk"), 0o600))
	got, err := s.List(ctx, state.Filter{Group: "test.openctl.io", Kind: "Thing"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = s.List(ctx, state.Filter{Kind: "Nothing"})
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = s.List(ctx, state.Filter{})
	require.Error(t, err)
}

func TestFileStoreAPIVersions(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	_, err := s.Put(ctx, thing("a"))
	require.NoError(t, err)
	v2 := thing("a")
	v2.APIVersion = "test.openctl.io/v2"
	_, err = s.Get(ctx, v2.ID())
	assert.True(t, errors.Is(err, errcode.NotFound), "got %v", err)
	_, err = s.Put(ctx, v2)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
	require.NoError(t, s.Delete(ctx, v2.ID()))
	_, err = s.Get(ctx, thing("a").ID())
	require.NoError(t, err, "deleting v2 leaves v1")
}

func TestFileStoreInvalidIDs(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	for _, id := range []manifest.ID{
		{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "../../etc"},
		{APIVersion: "../v1", Kind: "Thing", Name: "a"},
		{APIVersion: "test.openctl.io/v1", Kind: "../x", Name: "a"},
	} {
		_, err := s.Get(ctx, id)
		assert.True(t, errors.Is(err, errcode.Invalid), "%v: got %v", id, err)
		assert.True(t, errors.Is(s.Delete(ctx, id), errcode.Invalid))
	}
}

func TestFileStoreValuesRoundTrip(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	spec := map[string]any{
		"float":     2.0,
		"neg":       -0.5,
		"big":       1e300,
		"int":       int64(-42),
		"maxint":    int64(9223372036854775807),
		"yes":       "yes",
		"date":      "2024-01-01",
		"hex":       "0x10",
		"null-ish":  "null",
		"num":       "12",
		"empty":     "",
		"multiline": "line 1\nline 2\n",
		"binary":    "\xff\xfe raw",
		"unicode":   "héllo ☃",
		"nil":       nil,
		"list":      []any{int64(1), "two", 3.5, []any{}, map[string]any{}},
		"nested":    map[string]any{"a.b": map[string]any{"c: d": true}, "": false},
	}
	in := thing("v")
	in.Spec = spec
	in.Status = map[string]any{"uint": uint16(7), "int": 3}
	_, err := s.Put(ctx, in)
	require.NoError(t, err)
	got, err := s.Get(ctx, in.ID())
	require.NoError(t, err)
	assert.Equal(t, spec, got.Spec)
	assert.Equal(t, map[string]any{"uint": int64(7), "int": int64(3)}, got.Status)

	bad := thing("bad")
	bad.Spec = map[string]any{"ch": make(chan int)}
	_, err = s.Put(ctx, bad)
	assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
}

func TestFileStoreWithoutSecretsNeedsNoPassphrase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := state.OpenFile(dir, state.FileOptions{Passphrase: func() (secret.Secret, error) {
		t.Error("passphrase asked for")
		return secret.Secret{}, errors.New("no")
	}})
	require.NoError(t, err)
	r := thing("a")
	r.Secrets = nil
	stored, err := s.Put(t.Context(), r)
	require.NoError(t, err)
	_, err = s.Get(t.Context(), r.ID())
	require.NoError(t, err)
	_, err = s.List(t.Context(), state.Filter{})
	require.NoError(t, err)
	raw, err := s.ExportRaw(t.Context())
	require.NoError(t, err)
	require.Len(t, raw, 1)
	assert.Nil(t, raw[0].Sealed)
	assert.Equal(t, stored.Lineage, raw[0].Record.Lineage)
	_, err = os.Stat(filepath.Join(dir, "key.yaml"))
	assert.True(t, errors.Is(err, fs.ErrNotExist), "no key file without secrets")
	_, err = s.Key(t.Context())
	assert.True(t, errors.Is(err, errcode.NotFound), "got %v", err)
}

func TestFileStorePassphraseFailure(t *testing.T) {
	boom := errcode.New(errcode.Invalid, "no passphrase here")
	var calls atomic.Int32
	s, err := state.OpenFile(t.TempDir(), state.FileOptions{Passphrase: func() (secret.Secret, error) {
		calls.Add(1)
		return secret.Secret{}, boom
	}})
	require.NoError(t, err)
	for range 3 {
		_, err = s.Put(t.Context(), thing("a"))
		require.ErrorIs(t, err, boom)
	}
	assert.Equal(t, int32(1), calls.Load())
	_, err = s.Get(t.Context(), thing("a").ID())
	assert.True(t, errors.Is(err, errcode.NotFound), "nothing was written: %v", err)
}

// TestFileStorePassphraseOnce creates the key file on the first sealed
// write, then reads 1,000 times: one passphrase call, one derivation.
//
// Tests that count derivations (a process-wide counter) do not run in
// parallel.
func TestFileStorePassphraseOnce(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	dir := filepath.Join(t.TempDir(), "state")
	s, err := state.OpenFile(dir, state.FileOptions{Passphrase: countingPassphrase(testPassphrase, &calls)})
	require.NoError(t, err)
	before := seal.Derivations()
	r := thing("a")
	r.Secrets = nil
	_, err = s.Put(ctx, r)
	require.NoError(t, err)
	assert.Zero(t, calls.Load(), "no secrets yet, no passphrase")
	_, err = s.Put(ctx, thing("b"))
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, "key.yaml"))
	require.NoError(t, err, "the key file is created with the first secret")
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	for range 1000 {
		got, err := s.Get(ctx, thing("b").ID())
		require.NoError(t, err)
		require.Equal(t, "tok-b", got.Secrets["status.token"].Reveal())
	}
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, int64(1), seal.Derivations()-before)
}

func TestFileStoreWrongPassphrase(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "state")
	good := openFile(t, dir)
	_, err := good.Put(ctx, thing("a"))
	require.NoError(t, err)
	plain := thing("p")
	plain.Secrets = nil
	_, err = good.Put(ctx, plain)
	require.NoError(t, err)

	var calls atomic.Int32
	s, err := state.OpenFile(dir, state.FileOptions{Passphrase: countingPassphrase("not it", &calls)})
	require.NoError(t, err)
	before := seal.Derivations()
	for range 3 {
		_, err = s.Get(ctx, thing("a").ID())
		require.Error(t, err)
		assert.True(t, errors.Is(err, errcode.Unauthorized), "got %v", err)
		assert.Contains(t, err.Error(), "OPENCTL_STATE_PASSPHRASE")
	}
	_, err = s.List(ctx, state.Filter{})
	assert.True(t, errors.Is(err, errcode.Unauthorized), "got %v", err)
	_, err = s.Put(ctx, thing("c"))
	assert.True(t, errors.Is(err, errcode.Unauthorized), "got %v", err)
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, int64(1), seal.Derivations()-before, "a failed unlock is not retried")
	_, err = s.Get(ctx, plain.ID())
	require.NoError(t, err, "records without secrets stay readable")
}

func TestFileStoreTamperedSecrets(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		mod  func(t *testing.T, s *state.FileStore, a []byte) []byte
	}{
		{"ciphertext changed", func(t *testing.T, _ *state.FileStore, a []byte) []byte {
			return resum(flipAfter(t, body(t, a), "ciphertext: "))
		}},
		{"mac changed", func(t *testing.T, _ *state.FileStore, a []byte) []byte {
			return resum(flipAfter(t, body(t, a), "mac: "))
		}},
		{"secrets moved from another record", func(t *testing.T, s *state.FileStore, a []byte) []byte {
			b, err := os.ReadFile(recordPath(s, "b"))
			require.NoError(t, err)
			return resum(append(withoutSecrets(t, body(t, a)), secretsOf(t, body(t, b))...))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFileStore(t)
			for _, n := range []string{"a", "b"} {
				_, err := s.Put(ctx, thing(n))
				require.NoError(t, err)
			}
			path := recordPath(s, "a")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tt.mod(t, s, data), 0o600))
			_, err = s.Get(ctx, thing("a").ID())
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
			var te *seal.TamperedError
			assert.ErrorAs(t, err, &te)
			assert.Contains(t, err.Error(), "Thing/a")
			assert.Contains(t, err.Error(), path)
			_, err = s.List(ctx, state.Filter{})
			assert.ErrorAs(t, err, &te)
		})
	}
}

// flipAfter changes a character after the first marker in data to another
// value in both hex and base64 ('0' and '1'; a case change such as a → A
// would leave a hex MAC's value unchanged).
func flipAfter(t *testing.T, data []byte, marker string) []byte {
	t.Helper()
	i := bytes.Index(data, []byte(marker))
	require.Positive(t, i, marker)
	d := bytes.Clone(data)
	j := i + len(marker) + 5
	if d[j] == '0' {
		d[j] = '1'
	} else {
		d[j] = '0'
	}
	return d
}

// secretsOf returns the "secrets:" block of a record file body.
func secretsOf(t *testing.T, data []byte) []byte {
	t.Helper()
	var node yaml.Node
	require.NoError(t, yaml.Unmarshal(data, &node))
	var m struct {
		Secrets *seal.Sealed `yaml:"secrets"`
	}
	require.NoError(t, node.Decode(&m))
	require.NotNil(t, m.Secrets)
	return []byte(fmt.Sprintf("secrets:\n  ciphertext: %s\n  mac: %s\n", m.Secrets.Ciphertext, m.Secrets.MAC))
}

// withoutSecrets removes the "secrets:" block of a record file body.
func withoutSecrets(t *testing.T, data []byte) []byte {
	t.Helper()
	var out []byte
	skip := false
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte("secrets:")):
			skip = true
			continue
		case skip && bytes.HasPrefix(line, []byte("  ")):
			continue
		}
		skip = false
		out = append(out, line...)
	}
	require.NotEqual(t, len(data), len(out))
	return out
}

func TestFileStoreKeyFileModes(t *testing.T) {
	tests := []struct {
		name    string
		mode    fs.FileMode
		wantErr bool
		warn    bool
	}{
		{"private", 0o600, false, false},
		{"group readable", 0o640, false, true},
		{"group writable", 0o620, true, false},
		{"world writable", 0o602, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			s, err := state.OpenFile(filepath.Join(t.TempDir(), "state"), state.FileOptions{Passphrase: passphrase, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			kf, ring := testKey(t)
			require.NoError(t, state.UseKeyForTest(s, kf, ring))
			require.NoError(t, os.Chmod(filepath.Join(s.Dir(), "key.yaml"), tt.mode))
			_, err = s.Put(t.Context(), thing("a"))
			if tt.wantErr {
				require.Error(t, err)
				assert.True(t, errors.Is(err, errcode.Invalid), "got %v", err)
				assert.Contains(t, err.Error(), filepath.Join(s.Dir(), "key.yaml"))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.warn, strings.Contains(logs.String(), "readable"), logs.String())
		})
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = helperEnv("OPENCTL_TEST_NOTHING", "1")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func writeLockFile(t *testing.T, s *state.FileStore, scope string, data []byte) string {
	t.Helper()
	path := filepath.Join(s.Dir(), "locks", scope+".lock")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

func TestFileStoreLockHolders(t *testing.T) {
	ctx := t.Context()
	host, err := os.Hostname()
	require.NoError(t, err)
	dead := deadPID(t)
	boot := state.NewLockInfo("x").BootID
	holder := func(host string, pid int, boot string) []byte {
		info := state.LockInfo{ID: "someone", Scope: "default", Who: "alice", Host: host, PID: pid, Operation: "apply", Created: time.Now().UTC().Add(-time.Hour), BootID: boot}
		data, err := yaml.Marshal(info)
		require.NoError(t, err)
		return data
	}
	tests := []struct {
		name    string
		data    []byte
		stale   bool
		running bool // ForceUnlock refuses without Force
		pid     int
		detail  string
	}{
		{"dead process on this host, no boot ID (older openctl)", holder(host, dead, ""), true, false, dead, "lock file"},
		{"dead process on this host, another boot", holder(host, dead, "another-boot"), true, false, dead, "lock file"},
		{"dead process on this host, another PID namespace", func() []byte {
			info := state.NewLockInfo("apply")
			info.ID, info.Who, info.Scope, info.PID, info.PIDNamespace = "someone", "alice", "default", dead, "pid:[1]"
			data, err := yaml.Marshal(info)
			require.NoError(t, err)
			return data
		}(), true, false, dead, "lock file"},
		{"live process on this host", holder(host, os.Getpid(), boot), false, true, os.Getpid(), ""},
		{"live process on this host, no boot ID", holder(host, os.Getpid(), ""), false, true, os.Getpid(), ""},
		{"process on another host", holder("elsewhere.example", dead, boot), false, false, dead, ""},
		{"corrupt lock file", []byte("::: {{ not yaml"), false, false, 0, "cannot be read"},
		{"empty lock file", nil, false, false, 0, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFileStore(t)
			path := writeLockFile(t, s, state.DefaultScope, tt.data)
			_, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
			var le *state.LockedError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.stale, le.Stale)
			assert.Equal(t, tt.pid, le.Holder.PID)
			if tt.detail != "" {
				assert.Contains(t, err.Error(), tt.detail)
				assert.Contains(t, err.Error(), path)
			}
			if tt.stale || tt.detail == "cannot be read" {
				assert.Contains(t, err.Error(), "`openctl state force-unlock default`", "the message gives the CLI command")
				assert.NotContains(t, err.Error(), "ForceUnlock", "not the Go method")
			}
			if tt.stale {
				assert.Contains(t, err.Error(), "stale")
			}
			_, err = os.Stat(path)
			require.NoError(t, err, "Lock breaks no lock but a provably dead holder's")

			if tt.running {
				err := s.ForceUnlock(ctx, state.DefaultScope, state.ForceUnlockOptions{})
				require.Error(t, err, "a live holder's lock is not broken without Force")
				assert.True(t, errors.Is(err, errcode.Conflict), "got %v", err)
				require.ErrorAs(t, err, &le)
				assert.True(t, le.Running)
				assert.Equal(t, tt.pid, le.Holder.PID)
				assert.Contains(t, err.Error(), "alice@"+host)
				assert.Contains(t, err.Error(), "still runs")
				assert.Contains(t, err.Error(), "openctl state force-unlock --force default")
				_, err = os.Stat(path)
				require.NoError(t, err, "the lock file stays")
				require.NoError(t, s.ForceUnlock(ctx, state.DefaultScope, state.ForceUnlockOptions{Force: true}))
			} else {
				require.NoError(t, s.ForceUnlock(ctx, state.DefaultScope, state.ForceUnlockOptions{}))
			}
			require.NoError(t, s.ForceUnlock(ctx, state.DefaultScope, state.ForceUnlockOptions{}), "force-unlocking a free scope is harmless")
			u, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
			require.NoError(t, err)
			require.NoError(t, u())
			_, err = os.Stat(path)
			assert.True(t, errors.Is(err, fs.ErrNotExist), "unlock removes the lock file")
		})
	}
}

// A lock left by a process of this host and this boot that no longer
// runs is cleared by the next Lock, with a warning naming the holder
// (it once needed openctl state force-unlock every time).
func TestFileStoreClearsADeadHoldersLock(t *testing.T) {
	if state.NewLockInfo("x").BootID == "" {
		t.Skip("this system has no boot ID: no holder is provably dead")
	}
	ctx := t.Context()
	host, err := os.Hostname()
	require.NoError(t, err)
	var logs bytes.Buffer
	s, err := state.OpenFile(filepath.Join(t.TempDir(), "state"), state.FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	info := state.NewLockInfo("apply")
	info.PID, info.Who, info.Scope = deadPID(t), "alice", state.DefaultScope
	data, err := yaml.Marshal(info)
	require.NoError(t, err)
	writeLockFile(t, s, state.DefaultScope, data)
	unlock, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
	require.NoError(t, err, "a provably dead holder's lock is taken over")
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "cleared a stale lock")
	assert.Contains(t, logs.String(), fmt.Sprintf("pid=%d", info.PID))
	assert.Contains(t, logs.String(), "host="+host)
	require.NoError(t, unlock())
}

func TestFileStoreUnlockLeavesAnotherHoldersLock(t *testing.T) {
	ctx := t.Context()
	s := newFileStore(t)
	u1, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("apply"))
	require.NoError(t, err)
	require.NoError(t, s.ForceUnlock(ctx, state.DefaultScope, state.ForceUnlockOptions{Force: true}), "our own lock: the holder runs")
	u2, err := s.Lock(ctx, state.DefaultScope, state.NewLockInfo("delete"))
	require.NoError(t, err)
	require.NoError(t, u1(), "the broken lock's unlock is harmless")
	_, err = s.Lock(ctx, state.DefaultScope, state.NewLockInfo("x"))
	var le *state.LockedError
	require.ErrorAs(t, err, &le, "the second holder still holds it")
	assert.Equal(t, "delete", le.Holder.Operation)
	require.NoError(t, u2())
}

func TestFileStoreLockScopes(t *testing.T) {
	s := newFileStore(t)
	for _, scope := range []string{"", ".records", "../x", "a/b", strings.Repeat("x", 200)} {
		_, err := s.Lock(t.Context(), scope, state.NewLockInfo("apply"))
		assert.True(t, errors.Is(err, errcode.Invalid), "%q: got %v", scope, err)
		assert.True(t, errors.Is(s.ForceUnlock(t.Context(), scope, state.ForceUnlockOptions{}), errcode.Invalid))
	}
	u, err := s.Lock(t.Context(), "cluster-1.prod_x", state.NewLockInfo("apply"))
	require.NoError(t, err)
	require.NoError(t, u())
}

// TestFileStoreDottedNames: names are DNS-1123 subdomains ("web-01.lab"),
// and a dotted name is a file like any other — listed, read and deleted by
// its whole name, never confused with a shorter one.
func TestFileStoreDottedNames(t *testing.T) {
	s := newFileStore(t)
	ctx := t.Context()
	for _, name := range []string{"web-01", "web-01.lab", "web-01.lab.yaml"} {
		_, err := s.Put(ctx, &state.Record{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: name, SpecHash: name})
		require.NoError(t, err, name)
	}
	recs, err := s.List(ctx, state.Filter{})
	require.NoError(t, err)
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
		assert.Equal(t, r.Name, r.SpecHash)
	}
	assert.ElementsMatch(t, []string{"web-01", "web-01.lab", "web-01.lab.yaml"}, names)
	require.NoError(t, s.Delete(ctx, manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: "web-01.lab"}))
	recs, err = s.List(ctx, state.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, 2)
}
