package state_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// fakeBackend records the DSNs it is asked to open.
type fakeBackend struct {
	name    string
	schemes []string

	mu     sync.Mutex // guards opened
	opened []string
}

func (f *fakeBackend) Schemes() []string { return f.schemes }

func (f *fakeBackend) Open(_ context.Context, dsn string, _ state.OpenOptions) (state.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, dsn)
	return state.NewMemory(), nil
}

func TestSchemeOf(t *testing.T) {
	for _, tt := range []struct {
		dsn, want string
		ok        bool
	}{
		{"file:state", "file", true},
		{"file:///var/lib/openctl", "file", true},
		{"FILE:x", "file", true},
		{"postgres://u@h/db", "postgres", true},
		{"postgresql://u@h/db", "postgresql", true},
		{"git+ssh://x", "git+ssh", true},
		{"host=db dbname=openctl", "postgres", true},
		{"host=db password=a:b", "postgres", true},
		{"dbname=x", "postgres", true},
		{"/var/lib/openctl/state", "", false},
		{"state", "", false},
		{"", "", false},
		{":x", "", false},
		{"1x:y", "", false},
	} {
		t.Run(tt.dsn, func(t *testing.T) {
			got, ok := state.SchemeOf(tt.dsn)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFileDir(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	for _, tt := range []struct {
		dsn, want, err string
	}{
		{dsn: "file:state", want: "state"},
		{dsn: "file:./a/b", want: "./a/b"},
		{dsn: "file:/abs/dir", want: "/abs/dir"},
		{dsn: "file:///abs/dir", want: "/abs/dir"},
		{dsn: "file://rel", want: "rel"},
		{dsn: "FILE:x", want: "x"},
		{dsn: "file:~", want: home},
		{dsn: "file:~/x/y", want: filepath.Join(home, "x", "y")},
		{dsn: "file:~other/x", want: "~other/x"},
		{dsn: "file:", err: "names no directory"},
		{dsn: "file://", err: "names no directory"},
		{dsn: "postgres://u@h/db", err: "not a file DSN"},
		{dsn: "state", err: "not a file DSN"},
	} {
		t.Run(tt.dsn, func(t *testing.T) {
			got, err := state.FileDir(tt.dsn)
			if tt.err != "" {
				require.Error(t, err)
				assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMaskDSN(t *testing.T) {
	for _, tt := range []struct {
		dsn, want string
	}{
		{"postgres://ci:s3cret@db:5432/openctl", "postgres://ci:xxxxx@db:5432/openctl"},
		{"postgresql://ci:s3cret@db/openctl?sslmode=require", "postgresql://ci:xxxxx@db/openctl?sslmode=require"},
		{"postgres://ci@db/openctl?password=s3cret&sslmode=disable", "postgres://ci@db/openctl?password=xxxxx&sslmode=disable"},
		{"postgres://ci@db/openctl?sslpassword=s3cret", "postgres://ci@db/openctl?sslpassword=xxxxx"},
		{"postgres://ci@db/openctl", "postgres://ci@db/openctl"},
		{"postgres://ci:s3cret@db:bad port/x", "<a postgres DSN that does not parse>"},
		{"host=db password=s3cret dbname=openctl", "host=db password=xxxxx dbname=openctl"},
		{"host=db password = s3cret", "host=db password = xxxxx"},
		{"host=db password='s3 cret' dbname=x", "host=db password=xxxxx dbname=x"},
		{`host=db password='s3\' cret' dbname=x`, "host=db password=xxxxx dbname=x"},
		{"host=db PASSWORD=s3cret", "host=db PASSWORD=xxxxx"},
		{"host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"host=db dbname=openctl", "host=db dbname=openctl"},
		{"file:/var/lib/openctl", "file:/var/lib/openctl"},
		{"file:///var/lib/openctl", "file:///var/lib/openctl"},
		{"", ""},
	} {
		t.Run(tt.dsn, func(t *testing.T) {
			got := state.MaskDSN(tt.dsn)
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, got, "s3")
		})
	}
}

func FuzzMaskDSN(f *testing.F) {
	f.Add("s3cret", "db")
	f.Add("a b'c", "h")
	f.Add(`x\'y`, "h")
	f.Fuzz(func(t *testing.T, password, host string) {
		host = strings.Fields(host + " h")[0]
		if strings.ContainsAny(host, "=\\'") {
			return
		}
		kv := "host=" + host + " password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(password) + "' dbname=x"
		assert.Equal(t, "host="+host+" password=xxxxx dbname=x", state.MaskDSN(kv))
		u := "postgres://u:" + urlEscape(password) + "@db/x"
		assert.Equal(t, "postgres://u:xxxxx@db/x", state.MaskDSN(u))
	})
}

// urlEscape percent-encodes every byte but letters and digits.
func urlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func TestBackendsRegister(t *testing.T) {
	pg := &fakeBackend{name: "pg", schemes: []string{"postgres", "postgresql"}}
	for _, tt := range []struct {
		name     string
		first    []state.Backend
		add      []state.Backend
		err      string
		schemes  []string // after the second Register
		register bool
	}{
		{name: "zero value", add: []state.Backend{state.FileBackend{}, pg}, schemes: []string{"file", "postgres", "postgresql"}},
		{name: "duplicate", first: []state.Backend{state.FileBackend{}}, add: []state.Backend{pg, state.FileBackend{}}, err: `scheme "file" is already registered`, schemes: []string{"file"}},
		{name: "duplicate in one call", add: []state.Backend{pg, &fakeBackend{schemes: []string{"PostgreSQL"}}}, err: `"postgresql" is served twice`},
		{name: "empty scheme", add: []state.Backend{state.FileBackend{}, &fakeBackend{schemes: []string{""}}}, err: "is not a DSN scheme"},
		{name: "bad scheme", add: []state.Backend{&fakeBackend{schemes: []string{"a b"}}}, err: "is not a DSN scheme"},
		{name: "no schemes", add: []state.Backend{&fakeBackend{}}, err: "serves no scheme"},
		{name: "nil", add: []state.Backend{nil}, err: "is nil"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b state.Backends
			require.NoError(t, b.Register(tt.first...))
			err := b.Register(tt.add...)
			if tt.err != "" {
				require.Error(t, err)
				assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
				assert.Contains(t, err.Error(), tt.err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.schemes, nilIfEmpty(b.Schemes()), "nothing registered by a failed Register")
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestBackendsOpen(t *testing.T) {
	var b state.Backends
	pg := &fakeBackend{schemes: []string{"postgres", "postgresql"}}
	require.NoError(t, b.Register(pg))
	ctx := t.Context()

	for _, dsn := range []string{"postgres://u@h/db", "PostgreSQL://u@h/db", "host=h dbname=db"} {
		st, err := b.Open(ctx, dsn, state.OpenOptions{})
		require.NoError(t, err, dsn)
		require.NotNil(t, st)
	}
	assert.Equal(t, []string{"postgres://u@h/db", "PostgreSQL://u@h/db", "host=h dbname=db"}, pg.opened, "the DSN is passed whole")

	for _, tt := range []struct {
		name, dsn string
		want      []string
	}{
		{"unknown scheme", "mysql://root:s3cret@db/x", []string{`no backend for the "mysql" scheme`, "mysql://root:xxxxx@db/x", "registered: postgres, postgresql"}},
		{"file not registered", "file:state", []string{`"file" scheme`, "registered: postgres, postgresql"}},
		{"no scheme", "/var/lib/openctl", []string{"cannot tell what store", "/var/lib/openctl", "postgres, postgresql"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Open(ctx, tt.dsn, state.OpenOptions{})
			require.Error(t, err)
			assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}

	var empty state.Backends
	_, err := empty.Open(ctx, "host=db password=s3cret", state.OpenOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registered: none")
	assert.NotContains(t, err.Error(), "s3cret")

	var nilSet *state.Backends
	_, err = nilSet.Open(ctx, "file:x", state.OpenOptions{})
	assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	assert.Empty(t, nilSet.Schemes())
	assert.Error(t, nilSet.Register(state.FileBackend{}))
}

func TestBackendsConcurrent(t *testing.T) {
	var b state.Backends
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			assert.NoError(t, b.Register(&fakeBackend{schemes: []string{fmt.Sprintf("s%d", i)}}))
		}()
		go func() {
			defer wg.Done()
			_, _ = b.Open(t.Context(), fmt.Sprintf("s%d:x", i), state.OpenOptions{})
			_ = b.Schemes()
		}()
	}
	wg.Wait()
	assert.Len(t, b.Schemes(), 8)
}

func TestFileBackendRoundTrip(t *testing.T) {
	var b state.Backends
	require.NoError(t, b.Register(state.FileBackend{}))
	ctx := t.Context()
	for _, tt := range []struct {
		name string
		dsn  func(dir string) string
	}{
		{"file:DIR", func(dir string) string { return "file:" + dir }},
		{"file:///DIR", func(dir string) string { return "file://" + dir }},
		{"relative", func(dir string) string {
			rel, err := filepath.Rel(mustGetwd(t), dir)
			require.NoError(t, err)
			return "file:" + rel
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			st, err := b.Open(ctx, tt.dsn(dir), state.OpenOptions{Passphrase: passphrase})
			require.NoError(t, err)
			fs, ok := st.(*state.FileStore)
			require.True(t, ok, "%T", st)
			assert.Equal(t, dir, fs.Dir())
			kf, ring := testKey(t)
			require.NoError(t, state.UseKeyForTest(st, kf, ring))

			rec := thing("a")
			stored, err := st.Put(ctx, rec)
			require.NoError(t, err)

			again, err := b.Open(ctx, tt.dsn(dir), state.OpenOptions{Passphrase: passphrase})
			require.NoError(t, err)
			require.NoError(t, state.UseKeyForTest(again, kf, ring))
			got, err := again.Get(ctx, rec.ID())
			require.NoError(t, err)
			assert.Equal(t, stored.Generation, got.Generation)
			assert.Equal(t, stored.Spec, got.Spec)
			assert.True(t, got.Secrets["status.token"].Equal(secret.New("tok-a")), "the secret survives")
		})
	}
	_, err := b.Open(ctx, "file:", state.OpenOptions{})
	assert.True(t, errors.Is(err, errcode.Invalid), "%v", err)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}
