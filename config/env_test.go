package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
)

func TestEnvOverlay(t *testing.T) {
	dsn := "postgres://ci:" + envSecret + "@db.ci:5432/openctl"
	tests := []struct {
		name        string
		file        string // "" for no file
		env         []string
		wantDSN     string
		concurrency int
	}{
		{"no file", "", []string{config.EnvStateDSN, dsn, config.EnvApplyConcurrency, " 12 "}, dsn, 12},
		{"over the file", "state:\n  dsn: file:/srv/st\napply:\n  concurrency: 2\n", []string{config.EnvStateDSN, dsn, config.EnvApplyConcurrency, "3"}, dsn, 3},
		{"over the legacy layout", "state:\n  backend: file\n  dir: /srv/st\n", []string{config.EnvStateDSN, dsn}, dsn, config.DefaultConcurrency},
		{"only concurrency", "state:\n  dsn: file:/srv/st\n", []string{config.EnvApplyConcurrency, "1"}, "file:/srv/st", 1},
		{"empty variables are unset", "state:\n  dsn: file:/srv/st\napply:\n  concurrency: 2\n", []string{config.EnvStateDSN, "", config.EnvApplyConcurrency, ""}, "file:/srv/st", 2},
		{"provider variables are the drivers'", "", []string{"OPENCTL_PROXMOX_URL", "https://pve:8006", "OPENCTL_FILES_ROOT", "/x"}, "", config.DefaultConcurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if tt.file != "" {
				writeConfig(t, dir, tt.file, 0o600)
			}
			cfg, _, err := config.LoadEnv(path, envOf(home, tt.env...))
			require.NoError(t, err)
			got, err := cfg.StateDSN()
			require.NoError(t, err)
			want := tt.wantDSN
			if want == "" {
				want = "file:" + filepath.Join(home, ".openctl") + "/state"
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tt.concurrency, cfg.Concurrency())
			assert.Empty(t, cfg.ProviderNames())
		})
	}
}

func TestEnvOverlayErrors(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string
	}{
		{"word", "many", `config: OPENCTL_APPLY_CONCURRENCY: want a positive integer, got "many"`},
		{"zero", "0", `config: OPENCTL_APPLY_CONCURRENCY: want a positive integer, got "0"`},
		{"negative", "-2", `config: OPENCTL_APPLY_CONCURRENCY: want a positive integer, got "-2"`},
		{"fraction", "1.5", `config: OPENCTL_APPLY_CONCURRENCY: want a positive integer, got "1.5"`},
		{"long", "123456789012345678901234567890", `config: OPENCTL_APPLY_CONCURRENCY: want a positive integer, got "12345678901234567890..."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			// A valid file: the overlay's error is the only one.
			path := writeConfig(t, home, "apply:\n  concurrency: 2\n", 0o600)
			cfg, _, err := config.LoadEnv(path, envOf(home, config.EnvApplyConcurrency, tt.value))
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestEnvOverlayHome(t *testing.T) {
	home := t.TempDir()
	ocHome := filepath.Join(home, "oc")
	require.NoError(t, os.MkdirAll(ocHome, 0o700))
	writeConfig(t, ocHome, "apply:\n  concurrency: 5\n", 0o600)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".openctl"), 0o700))
	writeConfig(t, filepath.Join(home, ".openctl"), "apply:\n  concurrency: 7\n", 0o600)
	other := writeConfig(t, t.TempDir(), "apply:\n  concurrency: 6\n", 0o600)

	tests := []struct {
		name        string
		env         []string
		path        string
		concurrency int
		state       string
	}{
		{"OPENCTL_HOME", []string{config.EnvHome, ocHome}, filepath.Join(ocHome, "config.yaml"), 5, filepath.Join(ocHome, "state")},
		{"OPENCTL_CONFIG wins for the file, not the state", []string{config.EnvHome, ocHome, config.EnvConfig, other}, other, 6, filepath.Join(ocHome, "state")},
		{"neither", nil, filepath.Join(home, ".openctl", "config.yaml"), 7, filepath.Join(home, ".openctl", "state")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := config.LoadEnv("", envOf(home, tt.env...))
			require.NoError(t, err)
			assert.Equal(t, tt.path, cfg.Path)
			assert.Equal(t, tt.concurrency, cfg.Concurrency())
			dsn, err := cfg.StateDSN()
			require.NoError(t, err)
			assert.Equal(t, "file:"+tt.state, dsn)
		})
	}
}

func TestLoadUsesProcessEnvironment(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(config.EnvConfig, "")
	t.Setenv(config.EnvHome, filepath.Join(home, "oc"))
	t.Setenv(config.EnvStateDSN, "file:/srv/from-env")
	t.Setenv(config.EnvApplyConcurrency, "9")
	cfg, warnings, err := config.Load("")
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Empty(t, cfg.Path)
	assert.Equal(t, 9, cfg.Concurrency())
	dsn, err := cfg.StateDSN()
	require.NoError(t, err)
	assert.Equal(t, "file:/srv/from-env", dsn)
	assert.Equal(t, filepath.Join(home, "oc", "config.yaml")+" does not exist", cfg.Section("files").Describe())
}
