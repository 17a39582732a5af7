package config_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

func TestOpenStoreFile(t *testing.T) {
	home := filepath.Join(t.TempDir(), "oc")
	t.Setenv("OPENCTL_HOME", home)
	t.Setenv("OPENCTL_CONFIG", "")
	t.Setenv("OPENCTL_STATE_PASSPHRASE", "correct horse battery staple")
	t.Setenv("OPENCTL_STATE_PASSPHRASE_FILE", "")
	clearOverlayEnv(t)
	ctx := context.Background()

	cfg, _, err := config.Load("")
	require.NoError(t, err)
	st, closeStore, err := cfg.OpenStore(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeStore()) }()
	fs, ok := st.(*state.FileStore)
	require.True(t, ok, "%T", st)
	assert.Equal(t, filepath.Join(home, "state"), fs.Dir())

	// Records without secrets need no passphrase.
	rec := &state.Record{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "c1", SpecHash: "h"}
	_, err = st.Put(ctx, rec)
	require.NoError(t, err)
	_, err = st.Get(ctx, rec.ID())
	require.NoError(t, err)

	// A record with secrets asks seal.Passphrase, which reads
	// OPENCTL_STATE_PASSPHRASE, else OPENCTL_STATE_PASSPHRASE_FILE (here a
	// missing file, so that no slow key derivation runs).
	t.Setenv("OPENCTL_STATE_PASSPHRASE", "")
	t.Setenv("OPENCTL_STATE_PASSPHRASE_FILE", filepath.Join(home, "no-such-passphrase"))
	st, _, err = cfg.OpenStore(ctx)
	require.NoError(t, err)
	rec = &state.Record{APIVersion: "k3s.openctl.io/v1", Kind: "Cluster", Name: "c2", SpecHash: "h",
		Secrets: map[string]secret.Secret{"status.kubeconfig": secret.New("kube-" + labSecret)}}
	_, err = st.Put(ctx, rec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OPENCTL_STATE_PASSPHRASE_FILE")
	requireNoSecret(t, err.Error())

	// state.dir in the file wins over OPENCTL_HOME.
	dir := filepath.Join(t.TempDir(), "st")
	writeConfig(t, home, "state:\n  dir: "+dir+"\n", 0o600)
	cfg, _, err = config.Load("")
	require.NoError(t, err)
	st, _, err = cfg.OpenStore(ctx)
	require.NoError(t, err)
	assert.Equal(t, dir, st.(*state.FileStore).Dir())
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

func TestOpenStoreWithPassphrase(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{State: config.State{Dir: filepath.Join(dir, "st")}}
	calls := 0
	errNoPrompt := errors.New("no terminal to ask on")
	st, _, err := cfg.OpenStoreWith(context.Background(), config.StoreOptions{Passphrase: func() (secret.Secret, error) {
		calls++
		return secret.Secret{}, errNoPrompt
	}})
	require.NoError(t, err)
	_, err = st.Put(context.Background(), &state.Record{APIVersion: "x.openctl.io/v1", Kind: "K", Name: "n", SpecHash: "h",
		Secrets: map[string]secret.Secret{"status.s": secret.New("v")}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errNoPrompt), "%v", err)
	assert.Equal(t, 1, calls)
}

func TestOpenStorePostgres(t *testing.T) {
	// No server: the DSN reaches postgres.Open, which fails to connect and
	// names the host, never the password.
	for _, dsn := range []string{
		"postgres://openctl:" + dsnPass + "@127.0.0.1:1/openctl?connect_timeout=2",
		"host=127.0.0.1 port=1 user=openctl password=" + dsnPass + " dbname=openctl connect_timeout=2",
	} {
		cfg := &config.Config{State: config.State{DSN: secret.New(dsn)}}
		assert.Equal(t, config.BackendPostgres, cfg.StateBackend(), "a DSN alone selects postgres")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, err := cfg.OpenStore(ctx)
		cancel()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "127.0.0.1")
		assert.True(t, errcode.Retryable(err), "%v", err)
		requireNoSecret(t, fmt.Sprintf("%v %+v", err, err))
	}

	// A malformed DSN: Invalid, password not shown.
	cfg := &config.Config{State: config.State{Backend: config.BackendPostgres, DSN: secret.New("postgres://openctl:" + dsnPass + "@db:notaport/openctl")}}
	_, _, err := cfg.OpenStore(context.Background())
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	requireNoSecret(t, fmt.Sprintf("%v %+v", err, err))

	// Through the environment overlay.
	home := t.TempDir()
	cfg, _, err = config.LoadEnv("", envOf(home, "OPENCTL_STATE_DSN", "postgres://openctl:"+dsnPass+"@127.0.0.1:1/openctl?connect_timeout=2"))
	require.NoError(t, err)
	_, _, err = cfg.OpenStore(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1")
	requireNoSecret(t, fmt.Sprintf("%v %+v", err, err))
}

func TestOpenStoreBadBackend(t *testing.T) {
	cfg := &config.Config{State: config.State{Backend: "etcd"}}
	_, _, err := cfg.OpenStore(context.Background())
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), `state.backend: want file or postgres, got "etcd"`)
}

func TestMaskDSN(t *testing.T) {
	assert.Equal(t, "postgres://ann:xxxxx@db:5432/openctl", config.MaskDSN("postgres://ann:s3cret@db:5432/openctl"))
	assert.Equal(t, "postgres://db/openctl?password=xxxxx", config.MaskDSN("postgres://db/openctl?password=s3cret"))
	assert.Equal(t, "host=db password=xxxxx dbname=openctl", config.MaskDSN("host=db password=s3cret dbname=openctl"))
	assert.Equal(t, "host=db password=xxxxx dbname=openctl", config.MaskDSN("host=db password='s3 cret' dbname=openctl"))
}

func TestOpenStoreAt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, closeFn, err := config.OpenStoreAt(t.Context(), "file:"+dir, config.StoreOptions{})
	require.NoError(t, err)
	require.NoError(t, closeFn())
	fs, ok := st.(*state.FileStore)
	require.True(t, ok, "%T", st)
	assert.Equal(t, dir, fs.Dir())

	for _, bad := range []string{"file:", "s3://bucket/state", "state.db"} {
		_, _, err := config.OpenStoreAt(t.Context(), bad, config.StoreOptions{})
		require.Error(t, err, bad)
		assert.True(t, errcode.Is(err, errcode.Invalid), "%v", err)
	}
}
