package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	openssl "github.com/Luzifer/go-openssl/v4"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// Values of the KeyFile fields this version writes and accepts.
const (
	KeyFileVersion = 1
	KDFPBKDF2      = "pbkdf2-sha256"
	CipherAES256   = "aes-256-cbc"
)

// maxIterations bounds the iterations a key file may ask for, so that a
// corrupted or hostile file cannot make Unlock spin for hours.
const maxIterations = 100_000_000

// sealedKeyLen is the decoded length of KeyFile.SealedKey: the 16-byte
// "Salted__"+salt header and the 64 hex chars of the data key plus a full
// block of PKCS#7 padding.
const sealedKeyLen = aes.BlockSize + 64 + aes.BlockSize

// wrongPassphrase is the message of every Unlock failure that a wrong
// passphrase can cause.
const wrongPassphrase = "seal: wrong passphrase for the state key (" + EnvPassphrase + " / " + EnvPassphraseFile + ")"

// derivations counts passphrase derivations (NewKey, Unlock, Reseal).
var derivations atomic.Int64

// Derivations returns how many expensive passphrase derivations (NewKey,
// Unlock, Keyring.Reseal) this process has run. Sealing and opening records
// never adds to it.
func Derivations() int64 { return derivations.Load() }

// KeyFile is a store's data key sealed with the user's passphrase. The file
// store keeps it as YAML in <dir>/key.yaml, the PostgreSQL store in a row.
// It holds nothing secret without the passphrase. A KeyFile is a plain
// value: safe for concurrent reads, not for concurrent modification.
type KeyFile struct {
	Version    int    `json:"version" yaml:"version"`       // KeyFileVersion
	KDF        string `json:"kdf" yaml:"kdf"`               // KDFPBKDF2
	Iterations int    `json:"iterations" yaml:"iterations"` // >= DefaultIterations
	Cipher     string `json:"cipher" yaml:"cipher"`         // CipherAES256
	// SealedKey is single-line base64 of "Salted__" + salt + AES-256-CBC
	// ciphertext of the data key written as 64 lowercase hex chars, as
	// `openssl enc -aes-256-cbc -pbkdf2 -iter N -md sha256 -a -A` writes.
	SealedKey string `json:"sealedKey" yaml:"sealedKey"`
	// Check is hex HMAC-SHA256(dataKey, "openctl state key check v1"),
	// keyed with the raw 32-byte data key. It identifies the data key
	// (two key files sealing the same data key under different passphrases
	// have the same Check) and catches a wrong passphrase whose decryption
	// happens to end in valid padding.
	Check string `json:"check" yaml:"check"`
}

// NewKey creates a random 256-bit data key (crypto/rand) and seals it with
// passphrase using iterations PBKDF2-SHA256 iterations; 0 means
// DefaultIterations, fewer than DefaultIterations is an errcode.Invalid
// error. It runs one passphrase derivation.
func NewKey(passphrase secret.Secret, iterations int) (*KeyFile, *Keyring, error) {
	return newKey(passphrase, iterations, DefaultIterations)
}

func newKey(passphrase secret.Secret, iterations, minIter int) (*KeyFile, *Keyring, error) {
	if iterations == 0 {
		iterations = DefaultIterations
	}
	if err := checkIterations(iterations, minIter); err != nil {
		return nil, nil, err
	}
	if passphrase.IsZero() {
		return nil, nil, errcode.New(errcode.Invalid, "seal: the state passphrase is empty")
	}
	dataKey := make([]byte, dataKeyLen)
	if _, err := io.ReadFull(rand.Reader, dataKey); err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, "seal: generating the data key", err)
	}
	k := newKeyring(dataKey)
	clear(dataKey)
	kf, err := k.reseal(passphrase, iterations)
	if err != nil {
		return nil, nil, err
	}
	return kf, k, nil
}

// Reseal seals this Keyring's data key under a (new) passphrase, for
// passphrase rotation: records sealed with the Keyring stay valid and the
// returned KeyFile has the same Check. iterations 0 means
// DefaultIterations. It runs one passphrase derivation.
func (k *Keyring) Reseal(passphrase secret.Secret, iterations int) (*KeyFile, error) {
	if iterations == 0 {
		iterations = DefaultIterations
	}
	if err := checkIterations(iterations, DefaultIterations); err != nil {
		return nil, err
	}
	if passphrase.IsZero() {
		return nil, errcode.New(errcode.Invalid, "seal: the state passphrase is empty")
	}
	return k.reseal(passphrase, iterations)
}

func (k *Keyring) reseal(passphrase secret.Secret, iterations int) (*KeyFile, error) {
	derivations.Add(1)
	gen := openssl.NewPBKDF2Generator(sha256.New, iterations)
	ct, err := k.ossl.EncryptBinaryBytes(passphrase.Reveal(), []byte(k.pass), gen)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "seal: sealing the data key", err)
	}
	return &KeyFile{
		Version:    KeyFileVersion,
		KDF:        KDFPBKDF2,
		Iterations: iterations,
		Cipher:     CipherAES256,
		SealedKey:  base64.StdEncoding.EncodeToString(ct),
		Check:      k.check,
	}, nil
}

func checkIterations(n, minIter int) error {
	if n < minIter || n > maxIterations {
		return errcode.New(errcode.Invalid, fmt.Sprintf("seal: iterations %d out of range (%d to %d)", n, minIter, maxIterations))
	}
	return nil
}

// Validate checks the key file's structure without the passphrase: a known
// version, kdf and cipher, at least DefaultIterations iterations, a
// SealedKey of the right shape and a Check of 64 hex digits. Errors match
// errcode.Invalid and name the field.
func (kf *KeyFile) Validate() error { return kf.validate(DefaultIterations) }

func (kf *KeyFile) validate(minIter int) error {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.Invalid, "seal: key file field "+field+": "+fmt.Sprintf(format, args...))
	}
	switch {
	case kf == nil:
		return errcode.New(errcode.Invalid, "seal: no key file")
	case kf.Version != KeyFileVersion:
		return bad("version", "unsupported version %d (want %d)", kf.Version, KeyFileVersion)
	case kf.KDF != KDFPBKDF2:
		return bad("kdf", "unsupported %q (want %q)", kf.KDF, KDFPBKDF2)
	case kf.Cipher != CipherAES256:
		return bad("cipher", "unsupported %q (want %q)", kf.Cipher, CipherAES256)
	case kf.Iterations < minIter || kf.Iterations > maxIterations:
		return bad("iterations", "%d out of range (%d to %d)", kf.Iterations, minIter, maxIterations)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(kf.SealedKey)
	switch {
	case strings.ContainsAny(kf.SealedKey, "\r\n"):
		return bad("sealedKey", "not single-line base64: contains a line break")
	case err != nil:
		return bad("sealedKey", "not single-line base64: %v", err)
	case len(raw) != sealedKeyLen || !bytes.HasPrefix(raw, []byte("Salted__")):
		return bad("sealedKey", "not an openssl-enc sealed 256-bit key (%d bytes, want %d starting with Salted__)", len(raw), sealedKeyLen)
	}
	if c, err := hex.DecodeString(kf.Check); err != nil || len(c) != sha256.Size {
		return bad("check", "want %d hex digits", 2*sha256.Size)
	}
	return nil
}

// Unlock derives the key from passphrase — the one expensive derivation —
// and returns the Keyring. A wrong passphrase is an error matching
// errcode.Unauthorized; a malformed key file one matching errcode.Invalid.
func (kf *KeyFile) Unlock(passphrase secret.Secret) (*Keyring, error) {
	return kf.unlock(passphrase, DefaultIterations)
}

func (kf *KeyFile) unlock(passphrase secret.Secret, minIter int) (*Keyring, error) {
	if err := kf.validate(minIter); err != nil {
		return nil, err
	}
	if passphrase.IsZero() {
		return nil, errcode.New(errcode.Invalid, "seal: the state passphrase is empty")
	}
	raw, _ := base64.StdEncoding.DecodeString(kf.SealedKey) // validated
	derivations.Add(1)
	gen := openssl.NewPBKDF2Generator(sha256.New, kf.Iterations)
	plain, err := openssl.New().DecryptBinaryBytes(passphrase.Reveal(), raw, gen)
	if err != nil {
		// Bad padding: the usual sign of a wrong passphrase.
		return nil, errcode.New(errcode.Unauthorized, wrongPassphrase)
	}
	// About one wrong passphrase in 256 yields valid padding; its
	// plaintext is garbage, which the shape and Check tests below reject.
	dataKey := make([]byte, dataKeyLen)
	ok := len(plain) == 2*dataKeyLen && isLowerHex(plain)
	if ok {
		_, err = hex.Decode(dataKey, plain)
		ok = err == nil
	}
	clear(raw) // plain aliases raw: DecryptBinaryBytes decrypts in place
	if !ok {
		return nil, errcode.New(errcode.Unauthorized, wrongPassphrase)
	}
	k := newKeyring(dataKey)
	clear(dataKey)
	if !hmac.Equal([]byte(k.check), []byte(kf.Check)) {
		return nil, errcode.New(errcode.Unauthorized, wrongPassphrase)
	}
	return k, nil
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SameKey reports whether kf and o seal the same data key (their Check
// values are equal), whatever their passphrases. It needs no passphrase.
func (kf *KeyFile) SameKey(o *KeyFile) bool {
	return kf != nil && o != nil && kf.Check != "" && hmac.Equal([]byte(kf.Check), []byte(o.Check))
}

// LoadKeyFile reads and validates the YAML key file at path. A file that
// group or others can write is refused (errcode.Invalid naming the file and
// its mode); one they can read is loaded with a warning on log (nil
// discards). A missing file matches errcode.NotFound; an unreadable,
// truncated or corrupt one is an error naming the file.
func LoadKeyFile(path string, log *slog.Logger) (*KeyFile, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errcode.Wrap(errcode.NotFound, "seal: key file "+path+" does not exist", err)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "seal: key file "+path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "seal: key file "+path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("seal: key file %s is not a regular file (%s)", path, st.Mode()))
	}
	perm := st.Mode().Perm()
	if perm&0o022 != 0 {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("seal: key file %s has mode %04o: group/others can write it, refusing to use it (chmod 600 %s)", path, perm, path))
	}
	if perm&0o044 != 0 {
		log.Warn("seal: key file is readable by group/others; chmod 600 it", "file", path, "mode", fmt.Sprintf("%04o", perm))
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "seal: reading key file "+path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	kf := new(KeyFile)
	if err := dec.Decode(kf); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errcode.New(errcode.Invalid, "seal: key file "+path+" is empty")
		}
		return nil, errcode.Wrap(errcode.Invalid, "seal: key file "+path+" is corrupt", corruptKey{err})
	}
	if err := kf.Validate(); err != nil {
		return nil, fmt.Errorf("seal: key file %s: %w", path, err)
	}
	return kf, nil
}

// Save writes the key file to path as YAML, atomically: a temporary file in
// the same directory, mode 0600, fsynced, renamed over path, and the
// directory fsynced. The directory must exist.
func (kf *KeyFile) Save(path string) (err error) {
	if err := kf.Validate(); err != nil {
		return err
	}
	data, err := yaml.Marshal(kf)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "seal: encoding key file", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return errcode.Wrap(errcode.Internal, "seal: writing key file "+path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return errcode.Wrap(errcode.Internal, "seal: writing key file "+path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return errcode.Wrap(errcode.Internal, "seal: writing key file "+path, err)
	}
	if err = tmp.Sync(); err != nil {
		return errcode.Wrap(errcode.Internal, "seal: writing key file "+path, err)
	}
	if err = tmp.Close(); err != nil {
		return errcode.Wrap(errcode.Internal, "seal: writing key file "+path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return errcode.Wrap(errcode.Internal, "seal: writing key file "+path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil {
			return errcode.Wrap(errcode.Internal, "seal: syncing directory "+dir, serr)
		}
	} else {
		return errcode.Wrap(errcode.Internal, "seal: syncing directory "+dir, derr)
	}
	return nil
}

// ErrCorrupt is matched (errors.Is) by the error for a key file that does
// not decode; the error is errcode.Invalid too.
var ErrCorrupt = errors.New("seal: corrupt key file")

// corruptKey marks its cause as a corrupt key file.
type corruptKey struct{ cause error }

func (c corruptKey) Error() string        { return c.cause.Error() }
func (c corruptKey) Is(target error) bool { return target == ErrCorrupt }
func (c corruptKey) Unwrap() error        { return c.cause }
