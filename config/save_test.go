package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

func TestSaveKeepsTheFile(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, fullExample, 0o644)
	cfg, _, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	var before filesConfig
	require.NoError(t, cfg.Section("files").Decode(&before))

	require.NoError(t, cfg.UseContext("files", "prod"))
	require.NoError(t, cfg.Save())
	assert.Equal(t, path, cfg.Path)

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "0600 even though it was looser")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")

	text := readFile(t, path)
	for _, s := range []string{
		"# The lab is where we try things.",
		"# relative to this file",
		"default-context: prod",
		"password: \"" + labSecret + "\"", // secrets as they were written
		dsnPass,
		"root: ~/files/lab", // paths as they were written
		"root: data/prod",
		"passwordFile: ~/.openctl/secrets/prod.pw",
		"labels: {team: infra}",
		"anything: [1, 2]", // other providers' sections
		"concurrency: 8",
	} {
		assert.Contains(t, text, s)
	}
	assert.NotContains(t, text, "default-context: lab")
	assert.NotContains(t, text, secret.Redacted)

	again, warnings, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	var after filesConfig
	require.NoError(t, again.Section("files").Decode(&after))
	before.DefaultContext = "prod"
	assert.Equal(t, before, after)
	assert.Equal(t, []string{"files", "other"}, again.ProviderNames())
	assert.Equal(t, 8, again.Concurrency())
}

// TestSaveKeepsTheLayout: Save promises the file "as Load read it":
// comments and layout.
func TestSaveKeepsTheLayout(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // in the saved file
	}{
		{"header comment", "# openctl configuration, see the docs\n\nproviders:\n  files:\n    default-context: a\n", "# openctl configuration, see the docs\n"},
		{"indentation", "providers:\n  files:\n    default-context: a\n", "providers:\n  files:\n    default-context: b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, 0o600)
			cfg, _, err := config.LoadEnv(path, envOf(dir))
			require.NoError(t, err)
			require.NoError(t, cfg.UseContext("files", "b"))
			require.NoError(t, cfg.Save())
			assert.Contains(t, readFile(t, path), tt.want)
		})
	}
}

func TestUseContext(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // the section as saved
	}{
		{"replace", "providers:\n  files:\n    default-context: a\n    contexts: {a: {}, b: {}}\n", "default-context: b"},
		{"insert", "providers:\n  files:\n    contexts: {a: {}, b: {}}\n", "default-context: b"},
		{"a flow section", "providers: {files: {contexts: {a: {}, b: {}}}}\n", "default-context: b"},
		{"a name needing quotes", "providers:\n  files:\n    contexts: {a: {}}\n", `default-context: "true"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeConfig(t, dir, tt.content, 0o600)
			cfg, _, err := config.LoadEnv(path, envOf(dir))
			require.NoError(t, err)
			name := strings.Trim(strings.TrimPrefix(tt.want, "default-context: "), `"`)
			require.NoError(t, cfg.UseContext("files", name))

			// The section the driver decodes sees it before Save, too.
			var fc filesConfig
			require.NoError(t, cfg.Section("files").Decode(&fc))
			assert.Equal(t, name, fc.DefaultContext)

			require.NoError(t, cfg.Save())
			assert.Contains(t, readFile(t, path), tt.want)
			again, _, err := config.LoadEnv(path, envOf(dir))
			require.NoError(t, err)
			fc = filesConfig{}
			require.NoError(t, again.Section("files").Decode(&fc))
			assert.Equal(t, name, fc.DefaultContext)
		})
	}
}

func TestUseContextErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "providers:\n  files: {contexts: {a: {}}}\n  other: {}\n  nulled:\n", 0o600)
	cfg, _, err := config.LoadEnv(path, envOf(dir))
	require.NoError(t, err)
	require.NoError(t, cfg.Save())
	before := readFile(t, path)
	missing, _, err := config.LoadEnv(filepath.Join(dir, "none.yaml"), envOf(dir))
	require.NoError(t, err)

	tests := []struct {
		name     string
		cfg      *config.Config
		provider string
		want     string
	}{
		{"no such section", cfg, "vsphere", path + `: no provider "vsphere" is configured in the file (providers: files, nulled, other)`},
		{"no file", missing, "files", `config: no provider "files" is configured in the file (providers: none)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.UseContext(tt.provider, "a")
			require.Error(t, err)
			assert.True(t, errors.Is(err, errcode.Invalid))
			assert.Equal(t, tt.want, err.Error())
		})
	}
	require.NoError(t, cfg.Save())
	assert.Equal(t, before, readFile(t, path), "a failed UseContext changes nothing")
}

// Save never writes what the environment set, nor what a program changed
// in State or Apply: no token secret or DSN from CI variables lands in the
// file.
func TestSaveLeavesOutEnvOverlay(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	path := writeConfig(t, dir, fullExample, 0o600)
	dsn := "postgres://ci:" + envSecret + "@db.ci/openctl"
	env := envOf(home, config.EnvStateDSN, dsn, config.EnvApplyConcurrency, "16")
	cfg, _, err := config.LoadEnv(path, env)
	require.NoError(t, err)
	got, err := cfg.StateDSN()
	require.NoError(t, err)
	require.Equal(t, dsn, got)
	require.Equal(t, 16, cfg.Concurrency())
	require.NoError(t, cfg.UseContext("files", "prod"))
	cfg.Apply.Concurrency = 2
	cfg.State.DSN = secret.New("file:/changed")
	require.NoError(t, cfg.Save())

	text := readFile(t, path)
	assert.NotContains(t, text, envSecret)
	assert.NotContains(t, text, "16")
	assert.NotContains(t, text, "/changed")
	plain, _, err := config.LoadEnv(path, envOf(home))
	require.NoError(t, err)
	got, err = plain.StateDSN()
	require.NoError(t, err)
	assert.Equal(t, "postgres://openctl:"+dsnPass+"@db.example:5432/openctl", got)
	assert.Equal(t, 8, plain.Concurrency())
	var fc filesConfig
	require.NoError(t, plain.Section("files").Decode(&fc))
	assert.Equal(t, "prod", fc.DefaultContext, "the choice made after loading is saved")

	// With no file, saving under CI variables writes nothing of them.
	empty := filepath.Join(t.TempDir(), "config.yaml")
	cfg, _, err = config.LoadEnv(empty, env)
	require.NoError(t, err)
	require.NoError(t, cfg.Save())
	assert.Equal(t, empty, cfg.Path)
	assert.Empty(t, readFile(t, empty))
}

func TestSaveCreatesTheDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new", "dir", "config.yaml")
	cfg, _, err := config.LoadEnv(path, envOf(dir))
	require.NoError(t, err)
	assert.Empty(t, cfg.Path, "no file yet")
	require.NoError(t, cfg.Save())
	assert.Equal(t, path, cfg.Path, "Save writes where Load looked")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

func TestSaveToDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvConfig, "")
	t.Setenv(config.EnvHome, filepath.Join(home, "oc"))
	t.Setenv(config.EnvStateDSN, "")
	t.Setenv(config.EnvApplyConcurrency, "")

	// A Config built in code knows no file: Save uses DefaultPath.
	cfg := &config.Config{}
	require.NoError(t, cfg.Save())
	want := filepath.Join(home, "oc", "config.yaml")
	assert.Equal(t, want, cfg.Path)
	st, err := os.Stat(filepath.Join(home, "oc"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	st, err = os.Stat(want)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestSaveFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := writeConfig(t, dir, "providers:\n  files:\n    default-context: a\n", 0o600)
	link := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.Symlink(real, link))
	cfg, _, err := config.LoadEnv(link, envOf(dir))
	require.NoError(t, err)
	require.NoError(t, cfg.UseContext("files", "b"))
	require.NoError(t, cfg.Save())
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the link stays a link")
	assert.Contains(t, readFile(t, real), "default-context: b")
}

func TestSaveError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "config.yaml")
	cfg, _, err := config.LoadEnv(path, envOf(dir))
	require.NoError(t, err)
	// The directory Save would create is a file by now.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub"), nil, 0o600))
	err = cfg.Save()
	require.Error(t, err)
	assert.True(t, errors.Is(err, errcode.Invalid))
	assert.True(t, strings.HasPrefix(err.Error(), path+": cannot save the configuration: "), err.Error())
	assert.Empty(t, cfg.Path, "not saved")
}
