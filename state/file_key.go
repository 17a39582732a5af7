package state

import (
	"sync"

	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

// keyring unlocks or creates a store's data key, asking for the passphrase
// at most once in its life: the answer (or the failure) is remembered, and
// so is the unlocked key, so that a store runs one passphrase derivation
// however many records it seals and opens. FileStore and Memory use it. It
// is safe for concurrent use.
type keyring struct {
	passphrase func() (secret.Secret, error) // seal.PassphraseOnce: asks at most once

	mu     sync.Mutex      // guards the fields below
	rings  []*seal.Keyring // the keys unlocked or created, usually one
	bad    *seal.KeyFile   // a key file the passphrase failed to unlock
	badErr error           // and why
}

// secret returns the passphrase; k.passphrase is memoized (seal.PassphraseOnce).
func (k *keyring) secret() (secret.Secret, error) { return k.passphrase() }

// unlock returns the data key sealed in kf, running the passphrase
// derivation only if no key matching kf was unlocked before.
func (k *keyring) unlock(kf *seal.KeyFile) (*seal.Keyring, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.rings {
		if r.Matches(kf) {
			return r, nil
		}
	}
	if k.bad != nil && *k.bad == *kf {
		return nil, k.badErr
	}
	pass, err := k.secret()
	if err != nil {
		return nil, err
	}
	r, err := kf.Unlock(pass)
	if err != nil {
		c := *kf
		k.bad, k.badErr = &c, err
		return nil, err
	}
	k.rings = append(k.rings, r)
	return r, nil
}

// create makes a new data key sealed with the passphrase.
func (k *keyring) create() (*seal.KeyFile, *seal.Keyring, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pass, err := k.secret()
	if err != nil {
		return nil, nil, err
	}
	kf, r, err := seal.NewKey(pass, 0)
	if err != nil {
		return nil, nil, err
	}
	k.rings = append(k.rings, r)
	return kf, r, nil
}
