package pki_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/agent/pki"
)

// Key material is 0600 and a directory WriteFiles creates is 0700 even
// under a permissive umask: the modes do not depend on the process's
// umask. (No test of this package runs in parallel, so changing the
// umask for the duration of this one is safe.)
func TestWriteFilesModesIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	dir := filepath.Join(t.TempDir(), "a", "b")
	ca, err := pki.NewCA("umask CA")
	require.NoError(t, err)
	key, err := ca.KeyPEM()
	require.NoError(t, err)
	require.NoError(t, pki.WriteFiles(dir, map[string][]byte{pki.CACertFile: ca.CertPEM(), pki.CAKeyFile: key}))
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), d)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}
}

// WriteFiles into a directory that already exists leaves the directory's
// mode alone (documented behaviour: it only creates a missing one 0700);
// the files in it are still 0600. Pinned so that a change is deliberate.
func TestWriteFilesExistingDirModeKept(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	ca, err := pki.NewCA("existing dir CA")
	require.NoError(t, err)
	key, err := ca.KeyPEM()
	require.NoError(t, err)
	require.NoError(t, pki.WriteFiles(dir, map[string][]byte{pki.CAKeyFile: key}))
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, pki.CAKeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// Names that would escape the directory are refused before anything is
// written.
func TestWriteFilesRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../x", "a/b", `a\b`, "..", ".", ""} {
		err := pki.WriteFiles(filepath.Join(dir, "d"), map[string][]byte{"ok.pem": []byte("x"), name: []byte("x")})
		require.Error(t, err, name)
	}
	_, err := os.Stat(filepath.Join(dir, "d"))
	assert.True(t, os.IsNotExist(err), "nothing was created")
}
