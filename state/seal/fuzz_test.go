package seal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

// FuzzOpen: arbitrary sealed input never panics and never opens unless it
// is authentic.
func FuzzOpen(f *testing.F) {
	_, k, err := seal.NewKeyIter(secret.New("fuzz"), 1)
	require.NoError(f, err)
	s, err := k.Seal(vmID, sampleSecrets())
	require.NoError(f, err)
	f.Add(s.Ciphertext, s.MAC)
	f.Add("", "")
	f.Add("U2FsdGVkX1+AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", s.MAC)
	f.Fuzz(func(t *testing.T, ciphertext, mac string) {
		got, err := k.Open(vmID, &seal.Sealed{Ciphertext: ciphertext, MAC: mac})
		if ciphertext == s.Ciphertext && mac == s.MAC {
			require.NoError(t, err)
			require.Len(t, got, 3)
			return
		}
		var te *seal.TamperedError
		require.ErrorAs(t, err, &te)
	})
}

// FuzzLoadKeyFile: arbitrary key-file bytes never panic, and every error
// names the file.
func FuzzLoadKeyFile(f *testing.F) {
	kf, _, err := seal.NewKeyIter(secret.New("fuzz"), 1)
	require.NoError(f, err)
	kf.Iterations = seal.DefaultIterations
	dir := f.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(f, kf.Save(good))
	data, err := os.ReadFile(good)
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte{})
	f.Add([]byte("version: 1\nkdf: pbkdf2-sha256\n"))
	f.Add([]byte("[1, 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "key.yaml")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		got, err := seal.LoadKeyFile(p, nil)
		if err != nil {
			require.Contains(t, err.Error(), p)
			return
		}
		require.NoError(t, got.Validate())
	})
}
