package config_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
)

func TestPluginsTimeout(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  []string
		want time.Duration
	}{
		{"unset", "", nil, 0},
		{"from the file", "plugins:\n  timeout: 90s\n", nil, 90 * time.Second},
		{"the environment over the file", "plugins:\n  timeout: 90s\n", []string{config.EnvPluginTimeout, " 10m "}, 10 * time.Minute},
		{"the environment alone", "", []string{config.EnvPluginTimeout, "2m30s"}, 150 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if tt.file != "" {
				path = writeConfig(t, dir, tt.file, 0o600)
			}
			cfg, _, err := config.LoadEnv(path, envOf(home, tt.env...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.Plugins.Timeout)
		})
	}
}

func TestPluginsTimeoutErrors(t *testing.T) {
	tests := []struct {
		name, file string
		env        []string
		want       string
	}{
		{"words", "plugins:\n  timeout: five minutes\n", nil, `config.yaml:2:12: plugins.timeout: want a duration like 30s or 10m, got "five minutes"`},
		{"a bare number", "plugins:\n  timeout: 300\n", nil, `config.yaml:2:12: plugins.timeout: want a duration like 30s or 10m, got "300"`},
		{"negative", "plugins:\n  timeout: -1s\n", nil, `plugins.timeout: must not be negative, got -1s (0 means the default)`},
		{"unknown field", "plugins:\n  timeuot: 1s\n", nil, `plugins.timeuot: unknown field`},
		{"environment", "", []string{config.EnvPluginTimeout, "0s"}, `config: OPENCTL_PLUGIN_TIMEOUT: want a positive duration like 30s or 10m, got "0s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if tt.file != "" {
				path = writeConfig(t, dir, tt.file, 0o600)
			}
			_, _, err := config.LoadEnv(path, envOf(home, tt.env...))
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
