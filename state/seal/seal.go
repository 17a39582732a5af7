package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	openssl "github.com/Luzifer/go-openssl/v4"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
)

// DefaultIterations is the number of PBKDF2-SHA256 iterations that turn the
// passphrase into the key sealing the data key. It is also the minimum a
// key file may declare.
const DefaultIterations = 600_000

// RecordIterations is the number of PBKDF2-SHA256 iterations used for each
// record, whose "passphrase" is the random 256-bit data key written as hex:
// its entropy is the protection, and one iteration keeps every record
// decryptable with the openssl CLI (-pbkdf2 -iter 1).
const RecordIterations = 1

// Labels mixed into the HMACs derived from the data key. They are part of
// the on-disk format.
const (
	checkLabel = "openctl state key check v1"
	macLabel   = "openctl state mac v1"
)

// dataKeyLen is the length of the random data key in bytes (256 bits).
const dataKeyLen = 32

// Sealed is a record's secrets at rest: the openssl-compatible ciphertext of
// the JSON object {field path: value} and an HMAC binding it to the record's
// ID. Both fields are plain strings, safe to store in YAML or a database.
type Sealed struct {
	// Ciphertext is single-line base64 of "Salted__" + 8-byte salt +
	// AES-256-CBC ciphertext, exactly what
	// `openssl enc -aes-256-cbc -pbkdf2 -iter 1 -md sha256 -a -A` writes.
	Ciphertext string `json:"ciphertext" yaml:"ciphertext"`
	// MAC is hex HMAC-SHA256(macKey, id.String() + "\x00" + Ciphertext),
	// where macKey = HMAC-SHA256(dataKey, "openctl state mac v1").
	MAC string `json:"mac" yaml:"mac"`
}

// Keyring holds an unlocked data key and seals and opens records with it.
// Sealing and opening cost no passphrase derivation. A Keyring is immutable
// after creation and safe for concurrent use.
type Keyring struct {
	pass   string // the data key as 64 lowercase hex chars: the record passphrase
	macKey []byte // HMAC-SHA256(dataKey, macLabel)
	check  string // hex HMAC-SHA256(dataKey, checkLabel)
	ossl   *openssl.OpenSSL
	creds  openssl.CredsGenerator // PBKDF2-SHA256, RecordIterations
}

// newKeyring builds a Keyring from a raw 32-byte data key.
func newKeyring(dataKey []byte) *Keyring {
	return &Keyring{
		pass:   hex.EncodeToString(dataKey),
		macKey: hmacSum(dataKey, []byte(macLabel)),
		check:  hex.EncodeToString(hmacSum(dataKey, []byte(checkLabel))),
		ossl:   openssl.New(),
		creds:  openssl.NewPBKDF2Generator(sha256.New, RecordIterations),
	}
}

func hmacSum(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// Matches reports whether kf seals this Keyring's data key (compares the
// key files' Check values, no derivation).
func (k *Keyring) Matches(kf *KeyFile) bool {
	return kf != nil && hmac.Equal([]byte(k.check), []byte(kf.Check))
}

// mac returns the MAC of a ciphertext stored for id.
func (k *Keyring) mac(id manifest.ID, ciphertext string) []byte {
	m := hmac.New(sha256.New, k.macKey)
	m.Write([]byte(id.String()))
	m.Write([]byte{0})
	m.Write([]byte(ciphertext))
	return m.Sum(nil)
}

// Seal encrypts secrets for the record id. An empty or nil map seals to
// (nil, nil): a record without secrets stores nothing. Every call uses a
// fresh random salt, so sealing the same secrets twice gives different
// ciphertexts.
func (k *Keyring) Seal(id manifest.ID, secrets map[string]secret.Secret) (*Sealed, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	plain := make(map[string]string, len(secrets))
	for path, s := range secrets {
		plain[path] = s.Reveal()
	}
	js, err := json.Marshal(plain)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "seal: encoding secrets of "+id.Short(), err)
	}
	ct, err := k.ossl.EncryptBinaryBytes(k.pass, js, k.creds)
	clear(js)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "seal: encrypting secrets of "+id.Short(), err)
	}
	c := base64.StdEncoding.EncodeToString(ct)
	return &Sealed{Ciphertext: c, MAC: hex.EncodeToString(k.mac(id, c))}, nil
}

// Open verifies and decrypts the secrets sealed for the record id. A nil
// Sealed opens to (nil, nil). The MAC is checked, in constant time, before
// anything is decrypted; a mismatch — the ciphertext or MAC was altered,
// the sealed secrets were moved from another record, or they were sealed
// with another data key — is a *TamperedError, which matches
// errcode.Invalid.
func (k *Keyring) Open(id manifest.ID, s *Sealed) (map[string]secret.Secret, error) {
	if s == nil {
		return nil, nil
	}
	got, err := hex.DecodeString(s.MAC)
	if err != nil || !hmac.Equal(got, k.mac(id, s.Ciphertext)) {
		return nil, &TamperedError{ID: id}
	}
	// Authentic from here on: a failure below means the sealer wrote
	// something malformed with our key, not that someone tampered with it.
	ct, err := base64.StdEncoding.DecodeString(s.Ciphertext)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "seal: secrets of "+id.Short()+": malformed ciphertext", err)
	}
	// ct is a fresh buffer, so DecryptBinaryBytes may decrypt it in place.
	js, err := k.ossl.DecryptBinaryBytes(k.pass, ct, k.creds)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "seal: secrets of "+id.Short()+": decrypting", err)
	}
	var plain map[string]string
	err = json.Unmarshal(js, &plain)
	clear(ct)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "seal: secrets of "+id.Short()+": decoding", err)
	}
	out := make(map[string]secret.Secret, len(plain))
	for path, v := range plain {
		out[path] = secret.New(v)
	}
	return out, nil
}

// TamperedError reports sealed secrets whose MAC does not verify. It
// matches errcode.Invalid with errors.Is, and errcode.Of returns Invalid.
type TamperedError struct {
	ID manifest.ID // the record the secrets were opened for
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("seal: secrets of %s fail their integrity check (tampered, moved from another record, or sealed with another key)", e.ID.Short())
}

// Unwrap returns errcode.Invalid, so that errors.Is(err, errcode.Invalid)
// and errcode.Of(err) classify the error.
func (e *TamperedError) Unwrap() error { return errcode.Invalid }

// sumLabelPrefix prefixes the labels of the keys Sum derives, so that
// they never collide with the record MAC key or the key check.
const sumLabelPrefix = "openctl derived key v1: "

// Sum returns HMAC-SHA256(HMAC-SHA256(dataKey, "openctl derived key v1: " +
// label), msg): a MAC over msg under a key derived from the data key for
// one purpose, named by label (a saved plan's digest uses "openctl plan
// digest v1"). Only a holder of the unlocked data key can compute it;
// distinct labels give independent keys, none of them the record MAC key.
func (k *Keyring) Sum(label string, msg []byte) []byte {
	dataKey, _ := hex.DecodeString(k.pass) // 64 hex characters by construction
	return hmacSum(hmacSum(dataKey, []byte(sumLabelPrefix+label)), msg)
}
