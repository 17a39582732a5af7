package seal_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openssl "github.com/Luzifer/go-openssl/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

func TestNewKeyAndUnlockDefaultIterations(t *testing.T) {
	before := seal.Derivations()
	kf, k, err := seal.NewKey(pass, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), seal.Derivations()-before, "NewKey derives once")
	require.NoError(t, kf.Validate())
	assert.Equal(t, seal.DefaultIterations, kf.Iterations)
	assert.Equal(t, 1, kf.Version)
	assert.Equal(t, "pbkdf2-sha256", kf.KDF)
	assert.Equal(t, "aes-256-cbc", kf.Cipher)
	assert.Len(t, kf.Check, 64)

	k2, err := kf.Unlock(pass)
	require.NoError(t, err)
	assert.Equal(t, int64(2), seal.Derivations()-before, "Unlock derives once")
	s, err := k.Seal(vmID, sampleSecrets())
	require.NoError(t, err)
	got, err := k2.Open(vmID, s)
	require.NoError(t, err)
	assert.True(t, got["spec.password"].Equal(sampleSecrets()["spec.password"]))
}

func TestUnlockWrongPassphrase(t *testing.T) {
	t.Parallel() // full derivations; runs after the sequential tests that count derivations
	kf, _, err := seal.NewKey(pass, 0)
	require.NoError(t, err)
	_, err = kf.Unlock(secret.New("Correct horse battery staple"))
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.Unauthorized)
	assert.Equal(t, errcode.Unauthorized, errcode.Of(err))
	assert.Contains(t, err.Error(), "seal: wrong passphrase for the state key (OPENCTL_STATE_PASSPHRASE / OPENCTL_STATE_PASSPHRASE_FILE)")
}

func TestNewKeyRejects(t *testing.T) {
	tests := []struct {
		name       string
		passphrase secret.Secret
		iterations int
	}{
		{"too few iterations", pass, seal.DefaultIterations - 1},
		{"one iteration", pass, 1},
		{"negative iterations", pass, -5},
		{"absurd iterations", pass, 1 << 40},
		{"empty passphrase", secret.Secret{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := seal.Derivations()
			kf, k, err := seal.NewKey(tt.passphrase, tt.iterations)
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Nil(t, kf)
			assert.Nil(t, k)
			assert.Equal(t, before, seal.Derivations(), "no derivation on refusal")
		})
	}
}

// About one wrong key in 256 decrypts the sealed data key into something
// with valid PKCS#7 padding, which is all go-openssl checks. Unlock must
// still reject every one of them.
func TestUnlockRejectsWrongPassphrasesThatPassPadding(t *testing.T) {
	kf, _ := cheapKey(t, pass)
	raw, err := base64.StdEncoding.DecodeString(kf.SealedKey)
	require.NoError(t, err)
	gen := openssl.NewPBKDF2Generator(sha256.New, kf.Iterations)

	paddingPassed := 0
	tries := 0
	for ; tries < 20_000 && paddingPassed < 5; tries++ {
		wrong := secret.New(fmt.Sprintf("wrong passphrase %d", tries))
		if _, err := openssl.New().DecryptBinaryBytes(wrong.Reveal(), bytes.Clone(raw), gen); err == nil {
			paddingPassed++
		}
		_, err := kf.UnlockAnyIter(wrong)
		require.Error(t, err, "wrong passphrase %d accepted", tries)
		require.ErrorIs(t, err, errcode.Unauthorized)
	}
	t.Logf("%d wrong passphrases tried, %d passed go-openssl's padding check, all refused", tries, paddingPassed)
	require.Positive(t, paddingPassed, "no wrong passphrase passed the padding check; the test proved nothing")

	k, err := kf.UnlockAnyIter(pass)
	require.NoError(t, err)
	assert.True(t, k.Matches(kf))
}

// A sealed key that decrypts to a well-formed hex key which is not the one
// Check names (here: another key file's, sealed with the same passphrase)
// is refused as a wrong passphrase.
func TestUnlockChecksCheck(t *testing.T) {
	kfA, _ := cheapKey(t, pass)
	kfB, _ := cheapKey(t, pass)
	mixed := *kfA
	mixed.SealedKey = kfB.SealedKey
	_, err := mixed.UnlockAnyIter(pass)
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.Unauthorized)
}

func TestUnlockRefusesBelowDefaultIterations(t *testing.T) {
	kf, _ := cheapKey(t, pass)
	before := seal.Derivations()
	_, err := kf.Unlock(pass)
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "iterations")
	assert.Equal(t, before, seal.Derivations())
}

func TestValidate(t *testing.T) {
	good, _ := cheapKey(t, pass)
	good.Iterations = seal.DefaultIterations // Validate looks at the number only
	require.NoError(t, good.Validate())
	tests := []struct {
		name  string
		field string
		edit  func(kf *seal.KeyFile)
	}{
		{"version 0", "version", func(kf *seal.KeyFile) { kf.Version = 0 }},
		{"version 2", "version", func(kf *seal.KeyFile) { kf.Version = 2 }},
		{"kdf", "kdf", func(kf *seal.KeyFile) { kf.KDF = "scrypt" }},
		{"cipher", "cipher", func(kf *seal.KeyFile) { kf.Cipher = "aes-128-cbc" }},
		{"iterations low", "iterations", func(kf *seal.KeyFile) { kf.Iterations = 10_000 }},
		{"iterations huge", "iterations", func(kf *seal.KeyFile) { kf.Iterations = 1 << 40 }},
		{"sealedKey empty", "sealedKey", func(kf *seal.KeyFile) { kf.SealedKey = "" }},
		{"sealedKey wrapped", "sealedKey", func(kf *seal.KeyFile) { kf.SealedKey = kf.SealedKey[:64] + "\n" + kf.SealedKey[64:] }},
		{"sealedKey truncated", "sealedKey", func(kf *seal.KeyFile) { kf.SealedKey = kf.SealedKey[:100] }},
		{"sealedKey no header", "sealedKey", func(kf *seal.KeyFile) {
			kf.SealedKey = base64.StdEncoding.EncodeToString(make([]byte, 96))
		}},
		{"check empty", "check", func(kf *seal.KeyFile) { kf.Check = "" }},
		{"check short", "check", func(kf *seal.KeyFile) { kf.Check = kf.Check[:62] }},
		{"check not hex", "check", func(kf *seal.KeyFile) { kf.Check = "x" + kf.Check[1:] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kf := *good
			tt.edit(&kf)
			err := kf.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), "field "+tt.field+":")
		})
	}
	var nilKF *seal.KeyFile
	assert.ErrorIs(t, nilKF.Validate(), errcode.Invalid)
}

// validKeyFile returns a key file that passes Validate (its iterations field
// claims DefaultIterations; it is not unlockable) — enough for file tests.
func validKeyFile(t *testing.T) *seal.KeyFile {
	kf, _ := cheapKey(t, pass)
	kf.Iterations = seal.DefaultIterations
	return kf
}

func TestSaveAndLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key.yaml")
	// An existing, too-open file is replaced by a 0600 one.
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, os.Chmod(path, 0o644))

	kf := validKeyFile(t)
	require.NoError(t, kf.Save(path))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "sealedKey: "+kf.SealedKey+"\n", "sealedKey on one line, unquoted (the break-glass sed relies on it)")

	got, err := seal.LoadKeyFile(path, nil)
	require.NoError(t, err)
	assert.Equal(t, kf, got)

	// Saving again overwrites atomically.
	kf2 := validKeyFile(t)
	require.NoError(t, kf2.Save(path))
	got, err = seal.LoadKeyFile(path, nil)
	require.NoError(t, err)
	assert.Equal(t, kf2, got)
}

func TestSaveRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := validKeyFile(t)
	bad.Check = ""
	err := bad.Save(filepath.Join(dir, "key.yaml"))
	assert.ErrorIs(t, err, errcode.Invalid)
	assert.NoFileExists(t, filepath.Join(dir, "key.yaml"))

	err = validKeyFile(t).Save(filepath.Join(dir, "missing", "key.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "missing", "key.yaml"))
}

func TestLoadKeyFileModes(t *testing.T) {
	tests := []struct {
		mode    os.FileMode
		refused bool
		warned  bool
	}{
		{0o600, false, false},
		{0o400, false, false},
		{0o640, false, true},
		{0o604, false, true},
		{0o644, false, true},
		{0o620, true, false},
		{0o602, true, false},
		{0o660, true, false},
		{0o666, true, false},
		{0o777, true, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%04o", tt.mode), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key.yaml")
			require.NoError(t, validKeyFile(t).Save(path))
			require.NoError(t, os.Chmod(path, tt.mode))
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))

			kf, err := seal.LoadKeyFile(path, log)
			if tt.refused {
				require.Error(t, err)
				assert.Nil(t, kf)
				assert.ErrorIs(t, err, errcode.Invalid)
				assert.Contains(t, err.Error(), path)
				assert.Contains(t, err.Error(), fmt.Sprintf("mode %04o", tt.mode))
				assert.Contains(t, err.Error(), "chmod 600")
				return
			}
			require.NoError(t, err)
			require.NotNil(t, kf)
			if tt.warned {
				assert.Contains(t, logs.String(), "level=WARN")
				assert.Contains(t, logs.String(), "file="+path)
				assert.Contains(t, logs.String(), fmt.Sprintf("mode=%04o", tt.mode))
			} else {
				assert.Empty(t, logs.String())
			}
		})
	}
}

func TestLoadKeyFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.yaml")
	_, err := seal.LoadKeyFile(path, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, errcode.NotFound)
	assert.Contains(t, err.Error(), path)
}

func TestLoadKeyFileCorrupt(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, validKeyFile(t).Save(good))
	data, err := os.ReadFile(good)
	require.NoError(t, err)

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	// Every truncation of the file — except dropping only the final
	// newline — is an error naming the file.
	for n := 0; n < len(data)-1; n++ {
		p := write(fmt.Sprintf("trunc-%03d.yaml", n), data[:n])
		_, err := seal.LoadKeyFile(p, nil)
		require.Error(t, err, "truncated to %d bytes", n)
		require.ErrorIs(t, err, errcode.Invalid, "truncated to %d bytes", n)
		require.Contains(t, err.Error(), p)
	}
	tests := map[string]string{
		"garbage":         "{{{ not yaml",
		"a list":          "- 1\n- 2\n",
		"unknown field":   string(data) + "extra: 1\n",
		"wrong type":      strings.Replace(string(data), "iterations: 600000", "iterations: lots", 1),
		"binary":          "\x00\x01\x02\xff",
		"duplicate field": string(data) + "version: 1\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			p := write(strings.ReplaceAll(name, " ", "-")+".yaml", []byte(content))
			_, err := seal.LoadKeyFile(p, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, errcode.Invalid)
			assert.Contains(t, err.Error(), p)
		})
	}
	t.Run("directory", func(t *testing.T) {
		_, err := seal.LoadKeyFile(dir, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), dir)
	})
}

func TestDerivationsOnePerProcessNotPerRecord(t *testing.T) {
	before := seal.Derivations()
	kf, k := cheapKey(t, pass)
	k2, err := kf.UnlockAnyIter(pass)
	require.NoError(t, err)
	require.Equal(t, int64(2), seal.Derivations()-before)
	for i := range 1000 {
		id := vmID
		id.Name = fmt.Sprintf("vm-%04d", i)
		s, err := k.Seal(id, sampleSecrets())
		require.NoError(t, err)
		_, err = k2.Open(id, s)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), seal.Derivations()-before, "1,000 records sealed and opened without another derivation")
}

func TestReseal(t *testing.T) {
	t.Parallel() // three full derivations; runs after the sequential tests that count derivations
	kf, k := cheapKey(t, pass)
	s, err := k.Seal(vmID, sampleSecrets())
	require.NoError(t, err)

	_, err = k.Reseal(pass, 1000)
	assert.ErrorIs(t, err, errcode.Invalid, "Reseal keeps the iteration floor")
	_, err = k.Reseal(secret.Secret{}, 0)
	assert.ErrorIs(t, err, errcode.Invalid)

	newPass := secret.New("a new passphrase")
	kf2, err := k.Reseal(newPass, 0)
	require.NoError(t, err)
	assert.True(t, kf2.SameKey(kf))
	assert.NotEqual(t, kf.SealedKey, kf2.SealedKey)
	k2, err := kf2.Unlock(newPass)
	require.NoError(t, err)
	_, err = kf2.Unlock(pass)
	assert.ErrorIs(t, err, errcode.Unauthorized)
	got, err := k2.Open(vmID, s)
	require.NoError(t, err, "records sealed before the rotation still open")
	assert.Len(t, got, 3)
}
