package seal_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

func TestPassphrase(t *testing.T) {
	const unset = "\x00unset"
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	tests := []struct {
		name    string
		env     string
		file    string
		want    string
		wantErr []string // substrings of the error; nil means success
	}{
		{name: "env", env: "s3cret", file: unset, want: "s3cret"},
		{name: "env wins over file", env: "from-env", file: file("a", "from-file\n"), want: "from-env"},
		{name: "env keeps whitespace", env: " spaced \n", file: unset, want: " spaced \n"},
		{name: "file with newline", env: unset, file: file("b", "from-file\n"), want: "from-file"},
		{name: "file with CRLF", env: unset, file: file("c", "from-file\r\n"), want: "from-file"},
		{name: "file without newline", env: unset, file: file("d", "from-file"), want: "from-file"},
		{name: "file with two newlines", env: unset, file: file("e", "from-file\n\n"), want: "from-file\n"},
		{name: "group-readable file is fine", env: unset, file: func() string {
			p := file("f", "readable\n")
			require.NoError(t, os.Chmod(p, 0o644))
			return p
		}(), want: "readable"},
		{name: "empty env falls back to file", env: "", file: file("g", "from-file\n"), want: "from-file"},
		{name: "neither", env: unset, file: unset, wantErr: []string{seal.EnvPassphrase, seal.EnvPassphraseFile, "no state passphrase"}},
		{name: "env empty", env: "", file: unset, wantErr: []string{seal.EnvPassphrase + " is set but empty", seal.EnvPassphraseFile}},
		{name: "file var empty", env: unset, file: "", wantErr: []string{seal.EnvPassphrase, seal.EnvPassphraseFile}},
		{name: "file empty", env: unset, file: file("h", ""), wantErr: []string{"is empty", filepath.Join(dir, "h")}},
		{name: "file only newline", env: unset, file: file("i", "\n"), wantErr: []string{"is empty"}},
		{name: "file missing", env: unset, file: filepath.Join(dir, "missing"), wantErr: []string{seal.EnvPassphraseFile, filepath.Join(dir, "missing")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setenv(t, seal.EnvPassphrase, tt.env, unset)
			setenv(t, seal.EnvPassphraseFile, tt.file, unset)
			got, err := seal.Passphrase()
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, errcode.Invalid)
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				assert.True(t, got.IsZero())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Reveal())
		})
	}
}

// setenv sets (or, for the unset marker, removes) an environment variable
// for the test's duration.
func setenv(t *testing.T, key, value, unset string) {
	t.Helper()
	t.Setenv(key, "") // restores the original value at cleanup
	if value == unset {
		require.NoError(t, os.Unsetenv(key))
		return
	}
	t.Setenv(key, value)
}

func TestWeakPassphrase(t *testing.T) {
	tests := []struct {
		pass string
		weak bool
	}{
		{"x", true},
		{"elevenchars", true},
		{"ééééééééééé", true}, // 11 characters, 22 bytes
		{"twelve chars", false},
		{"correct horse battery staple", false},
		{"", false}, // empty is an error elsewhere, not a weak passphrase
	}
	for _, tt := range tests {
		t.Run(tt.pass, func(t *testing.T) {
			w := seal.WeakPassphrase(secret.New(tt.pass))
			if !tt.weak {
				assert.Empty(t, w)
				return
			}
			assert.Contains(t, w, "fewer than 12")
			if tt.pass != "" {
				assert.NotContains(t, w, tt.pass, "the warning must not show the passphrase")
			}
		})
	}
}

func TestWarnWeakLogsOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	get := seal.PassphraseOnce(seal.WarnWeak(func() (secret.Secret, error) { return secret.New("k"), nil }, log))
	for range 3 {
		p, err := get()
		require.NoError(t, err)
		assert.Equal(t, "k", p.Reveal())
	}
	assert.Equal(t, 1, strings.Count(buf.String(), "level=WARN"), buf.String())
	assert.Contains(t, buf.String(), "has 1 characters, fewer than 12")

	buf.Reset()
	_, err := seal.WarnWeak(func() (secret.Secret, error) { return secret.New("a long enough passphrase"), nil }, log)()
	require.NoError(t, err)
	assert.Empty(t, buf.String())
}

// PassphraseFrom reads the environment it is given, not the process's.
func TestPassphraseFrom(t *testing.T) {
	t.Setenv(seal.EnvPassphrase, "from the process")
	dir := t.TempDir()
	file := filepath.Join(dir, "pass")
	require.NoError(t, os.WriteFile(file, []byte("from a file\n"), 0o600))
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
		err  string
	}{
		{"variable", map[string]string{seal.EnvPassphrase: "given"}, "given", ""},
		{"file", map[string]string{seal.EnvPassphraseFile: file}, "from a file", ""},
		{"neither", map[string]string{}, "", "no state passphrase"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := seal.PassphraseFrom(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				require.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Reveal())
		})
	}
	p, err := seal.PassphraseFrom(nil)
	require.NoError(t, err)
	assert.Equal(t, "from the process", p.Reveal(), "nil: the process's environment")
}
