package seal

import (
	"encoding/hex"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
)

// NewKeyIter is NewKey without the DefaultIterations floor, so that tests
// can make cheap keys. Tests only.
func NewKeyIter(passphrase secret.Secret, iterations int) (*KeyFile, *Keyring, error) {
	return newKey(passphrase, iterations, 1)
}

// UnlockAnyIter is Unlock without the DefaultIterations floor. Tests only.
func (kf *KeyFile) UnlockAnyIter(passphrase secret.Secret) (*Keyring, error) {
	return kf.unlock(passphrase, 1)
}

// MACOf returns the MAC Seal would compute for ciphertext under id, so tests
// can build authentic but malformed records. Tests only.
func (k *Keyring) MACOf(id manifest.ID, ciphertext string) string {
	return hex.EncodeToString(k.mac(id, ciphertext))
}
