package seal

import (
	"sync"

	"github.com/openctl/openctl/secret"
)

// Unlocker unlocks and creates a store's data keys with one passphrase,
// asked for at most once (see [PassphraseOnce]). It remembers every key it
// unlocked or created and the last key file the passphrase failed on, so a
// store runs one passphrase derivation however many records it seals and
// opens, and never retries a wrong passphrase. It is safe for concurrent
// use.
type Unlocker struct {
	passphrase func() (secret.Secret, error) // memoized

	mu     sync.Mutex // guards the fields below; held across a derivation
	rings  []*Keyring // the keys unlocked or created, usually one
	bad    *KeyFile   // a key file the passphrase failed to unlock
	badErr error      // and why
}

// NewUnlocker returns an Unlocker asking get (nil: [Passphrase]) for the
// passphrase the first time one is needed.
func NewUnlocker(get func() (secret.Secret, error)) *Unlocker {
	return &Unlocker{passphrase: PassphraseOnce(get)}
}

// Passphrase returns the passphrase (asked for at most once).
func (u *Unlocker) Passphrase() (secret.Secret, error) { return u.passphrase() }

// Unlock returns the data key sealed in kf, running the passphrase
// derivation only if no key matching kf was unlocked or created before.
func (u *Unlocker) Unlock(kf *KeyFile) (*Keyring, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, r := range u.rings {
		if r.Matches(kf) {
			return r, nil
		}
	}
	if u.bad != nil && *u.bad == *kf {
		return nil, u.badErr
	}
	pass, err := u.passphrase()
	if err != nil {
		return nil, err
	}
	r, err := kf.Unlock(pass)
	if err != nil {
		c := *kf
		u.bad, u.badErr = &c, err
		return nil, err
	}
	u.rings = append(u.rings, r)
	return r, nil
}

// Create makes a new data key sealed with the passphrase
// ([DefaultIterations]) and remembers it.
func (u *Unlocker) Create() (*KeyFile, *Keyring, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	pass, err := u.passphrase()
	if err != nil {
		return nil, nil, err
	}
	kf, r, err := NewKey(pass, 0)
	if err != nil {
		return nil, nil, err
	}
	u.rings = append(u.rings, r)
	return kf, r, nil
}

// Add remembers a key unlocked elsewhere (for example by another store on
// the same key), so that Unlock returns it without a derivation.
func (u *Unlocker) Add(r *Keyring) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.rings = append(u.rings, r)
}
