package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
)

const envURL = "https://pve.ci:8006"

func TestEnvOverlayProxmox(t *testing.T) {
	home := t.TempDir()
	fp := "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
	env := envOf(home,
		"OPENCTL_PROXMOX_URL", envURL,
		"OPENCTL_PROXMOX_TOKEN_ID", "ci@pve!openctl",
		"OPENCTL_PROXMOX_TOKEN_SECRET", envSecret,
		"OPENCTL_PROXMOX_FINGERPRINT", fp,
		"OPENCTL_PROXMOX_NODE", "pve9",
	)

	// No file at all.
	cfg, _, err := config.LoadEnv(filepath.Join(home, "none.yaml"), env)
	require.NoError(t, err)
	pc, err := cfg.Proxmox("")
	require.NoError(t, err)
	assert.Equal(t, "env", pc.DefaultContext)
	c := pc.Contexts["env"]
	assert.Equal(t, envURL, c.Endpoint)
	assert.Equal(t, "ci@pve!openctl", c.TokenID)
	assert.Equal(t, envSecret, c.TokenSecret.Reveal())
	assert.Equal(t, fp, c.Fingerprint)
	assert.Equal(t, "pve9", c.Node)
	assert.Equal(t, []config.ContextInfo{{Name: "env", Endpoint: envURL, Node: "pve9", Credentials: "env", Current: true}}, cfg.Contexts("proxmox"))
	requireNoSecret(t, fmt.Sprintf("%v %+v", cfg, cfg.Redacted()))

	// Over a file: the file's contexts stay, env is the default, --context
	// still picks another; the file's own "env" context is replaced.
	dir := t.TempDir()
	path := writeConfig(t, dir, fullExample, 0o600)
	cfg, _, err = config.LoadEnv(path, env)
	require.NoError(t, err)
	pc, err = cfg.Proxmox("")
	require.NoError(t, err)
	assert.Equal(t, "env", pc.DefaultContext)
	assert.Contains(t, pc.Contexts, "lab")
	pc, err = cfg.Proxmox("lab")
	require.NoError(t, err)
	assert.Equal(t, "lab", pc.DefaultContext)

	// A token secret file instead of the secret.
	cfg, _, err = config.LoadEnv("", envOf(home,
		"OPENCTL_PROXMOX_URL", envURL,
		"OPENCTL_PROXMOX_TOKEN_ID", "ci@pve!openctl",
		"OPENCTL_PROXMOX_TOKEN_SECRET_FILE", "~/token",
	))
	require.NoError(t, err)
	pc, err = cfg.Proxmox("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "token"), pc.Contexts["env"].TokenSecretFile)
	assert.True(t, pc.Contexts["env"].TokenSecret.IsZero())
}

func TestEnvOverlayErrors(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want []string
	}{
		{"no token", []string{"OPENCTL_PROXMOX_URL", envURL}, []string{"OPENCTL_PROXMOX_URL is set but OPENCTL_PROXMOX_TOKEN_ID and OPENCTL_PROXMOX_TOKEN_SECRET (or OPENCTL_PROXMOX_TOKEN_SECRET_FILE) are not"}},
		{"no secret", []string{"OPENCTL_PROXMOX_URL", envURL, "OPENCTL_PROXMOX_TOKEN_ID", "ci@pve!openctl"}, []string{"OPENCTL_PROXMOX_TOKEN_SECRET (or OPENCTL_PROXMOX_TOKEN_SECRET_FILE) is not"}},
		{"no id", []string{"OPENCTL_PROXMOX_URL", envURL, "OPENCTL_PROXMOX_TOKEN_SECRET", envSecret}, []string{"OPENCTL_PROXMOX_TOKEN_ID is not"}},
		{"both secrets", []string{"OPENCTL_PROXMOX_URL", envURL, "OPENCTL_PROXMOX_TOKEN_ID", "a@b!c", "OPENCTL_PROXMOX_TOKEN_SECRET", envSecret, "OPENCTL_PROXMOX_TOKEN_SECRET_FILE", "/x"}, []string{"set only one"}},
		{"no url", []string{"OPENCTL_PROXMOX_TOKEN_ID", "a@b!c", "OPENCTL_PROXMOX_TOKEN_SECRET", envSecret}, []string{"OPENCTL_PROXMOX_TOKEN_ID, OPENCTL_PROXMOX_TOKEN_SECRET are set but OPENCTL_PROXMOX_URL is not"}},
		{"concurrency word", []string{"OPENCTL_APPLY_CONCURRENCY", "many"}, []string{`OPENCTL_APPLY_CONCURRENCY: want a positive integer, got "many"`}},
		{"concurrency zero", []string{"OPENCTL_APPLY_CONCURRENCY", "0"}, []string{"OPENCTL_APPLY_CONCURRENCY"}},
		{"concurrency negative", []string{"OPENCTL_APPLY_CONCURRENCY", "-2"}, []string{"OPENCTL_APPLY_CONCURRENCY"}},
		{"several", []string{"OPENCTL_PROXMOX_URL", envURL, "OPENCTL_APPLY_CONCURRENCY", "x"}, []string{"OPENCTL_PROXMOX_TOKEN_ID", "OPENCTL_APPLY_CONCURRENCY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			_, _, err := config.LoadEnv("", envOf(home, tt.kv...))
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid))
			for _, s := range tt.want {
				assert.Contains(t, err.Error(), s)
			}
			requireNoSecret(t, fmt.Sprintf("%v %+v", err, err))
		})
	}
}

func TestEnvOverlayStateAndConcurrency(t *testing.T) {
	home := t.TempDir()
	dsn := "postgres://ci:" + dsnPass + "@db.ci:5432/openctl"
	cfg, _, err := config.LoadEnv("", envOf(home, "OPENCTL_STATE_DSN", dsn, "OPENCTL_APPLY_CONCURRENCY", " 12 "))
	require.NoError(t, err)
	assert.Equal(t, config.BackendPostgres, cfg.StateBackend())
	assert.Equal(t, dsn, cfg.State.DSN.Reveal())
	assert.Equal(t, 12, cfg.Concurrency())

	// Over a file that says otherwise.
	dir := t.TempDir()
	path := writeConfig(t, dir, "state:\n  backend: file\napply:\n  concurrency: 2\n", 0o600)
	cfg, _, err = config.LoadEnv(path, envOf(home, "OPENCTL_STATE_DSN", dsn, "OPENCTL_APPLY_CONCURRENCY", "3"))
	require.NoError(t, err)
	assert.Equal(t, config.BackendPostgres, cfg.StateBackend())
	assert.Equal(t, 3, cfg.Concurrency())
}

func TestEnvOverlayHome(t *testing.T) {
	home := t.TempDir()
	ocHome := filepath.Join(home, "oc")
	require.NoError(t, os.MkdirAll(ocHome, 0o700))
	writeConfig(t, ocHome, "apply:\n  concurrency: 5\n", 0o600)

	cfg, _, err := config.LoadEnv("", envOf(home, "OPENCTL_HOME", ocHome))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(ocHome, "config.yaml"), cfg.Path)
	assert.Equal(t, 5, cfg.Concurrency())
	dir, err := cfg.StateDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(ocHome, "state"), dir)

	// OPENCTL_CONFIG wins over OPENCTL_HOME for the file, not the state.
	other := writeConfig(t, t.TempDir(), "apply:\n  concurrency: 6\n", 0o600)
	cfg, _, err = config.LoadEnv("", envOf(home, "OPENCTL_HOME", ocHome, "OPENCTL_CONFIG", other))
	require.NoError(t, err)
	assert.Equal(t, 6, cfg.Concurrency())
	dir, err = cfg.StateDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(ocHome, "state"), dir)

	// Neither: ~/.openctl.
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".openctl"), 0o700))
	writeConfig(t, filepath.Join(home, ".openctl"), "apply:\n  concurrency: 7\n", 0o600)
	cfg, _, err = config.LoadEnv("", envOf(home))
	require.NoError(t, err)
	assert.Equal(t, 7, cfg.Concurrency())
}

// Save never writes what the environment set: no token secret or DSN from
// CI variables lands in the file.
func TestSaveLeavesOutEnvOverlay(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, fullExample, 0o600)
	dsn := "postgres://ci:" + envSecret + "@db.ci/openctl"
	env := envOf(home,
		"OPENCTL_PROXMOX_URL", envURL,
		"OPENCTL_PROXMOX_TOKEN_ID", "ci@pve!openctl",
		"OPENCTL_PROXMOX_TOKEN_SECRET", envSecret,
		"OPENCTL_STATE_DSN", dsn,
		"OPENCTL_APPLY_CONCURRENCY", "16",
	)
	cfg, _, err := config.LoadEnv(path, env)
	require.NoError(t, err)
	require.NoError(t, cfg.Save())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), envSecret)
	assert.NotContains(t, string(data), envURL)
	assert.NotContains(t, string(data), "env:")
	plain, _, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Equal(t, "lab", plain.Providers["proxmox"].DefaultContext)
	assert.Equal(t, config.BackendFile, plain.State.Backend)
	assert.Equal(t, "postgres://openctl:"+dsnPass+"@db.example:5432/openctl", plain.State.DSN.Reveal())
	assert.Equal(t, 8, plain.Apply.Concurrency)

	// A choice made after loading is saved: use-context under CI variables.
	cfg, _, err = config.LoadEnv(path, env)
	require.NoError(t, err)
	require.NoError(t, cfg.UseContext("proxmox", "prod"))
	cfg.Apply.Concurrency = 2
	require.NoError(t, cfg.Save())
	plain, _, err = config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Equal(t, "prod", plain.Providers["proxmox"].DefaultContext)
	assert.Equal(t, 2, plain.Apply.Concurrency)
	assert.NotContains(t, plain.Providers["proxmox"].Contexts, "env")

	// With no file, saving under CI variables writes no proxmox section.
	empty := filepath.Join(t.TempDir(), "config.yaml")
	cfg, _, err = config.LoadEnv(empty, env)
	require.NoError(t, err)
	require.NoError(t, cfg.Save())
	data, err = os.ReadFile(empty)
	require.NoError(t, err)
	assert.Equal(t, "{}\n", string(data))
}

// TestUseContextEnv: the context the environment defines cannot be made
// the saved default — Save leaves the overlay out, so "switched" would be
// a lie — unless the file has a context of that name too.
func TestUseContextEnv(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	env := envOf(home,
		"OPENCTL_PROXMOX_URL", envURL,
		"OPENCTL_PROXMOX_TOKEN_ID", "ci@pve!openctl",
		"OPENCTL_PROXMOX_TOKEN_SECRET", envSecret,
	)
	cfg, _, err := config.LoadEnv(filepath.Join(dir, "none.yaml"), env)
	require.NoError(t, err)
	err = cfg.UseContext("proxmox", "env")
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid))
	assert.Contains(t, err.Error(), "OPENCTL_PROXMOX_URL")

	path := writeConfig(t, dir, "providers:\n  proxmox:\n    contexts:\n      env: {endpoint: https://pve.file:8006, credentials: c}\n      lab: {endpoint: https://pve.lab:8006, credentials: c}\n    credentials:\n      c: {tokenId: root@pam!openctl, tokenSecretFile: t}\n", 0o600)
	cfg, _, err = config.LoadEnv(path, env)
	require.NoError(t, err)
	require.NoError(t, cfg.UseContext("proxmox", "env"), "the file's own env context")
}
