package seal

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// The environment variables Passphrase reads.
const (
	EnvPassphrase     = "OPENCTL_STATE_PASSPHRASE"
	EnvPassphraseFile = "OPENCTL_STATE_PASSPHRASE_FILE"
)

// Passphrase returns the state passphrase: $OPENCTL_STATE_PASSPHRASE if it
// is non-empty, else the contents of the file $OPENCTL_STATE_PASSPHRASE_FILE
// names (one trailing newline removed). Neither set, an unreadable file or
// an empty passphrase is an errcode.Invalid error that says what to set.
func Passphrase() (secret.Secret, error) {
	_, set := os.LookupEnv(EnvPassphrase)
	return passphrase(os.Getenv, set)
}

// PassphraseFrom is Passphrase reading the environment through getenv
// (nil: os.Getenv): for programs — the CLI run by a test, an embedder —
// whose environment is not the process's.
func PassphraseFrom(getenv func(string) string) (secret.Secret, error) {
	if getenv == nil {
		return Passphrase()
	}
	return passphrase(getenv, false)
}

// passphrase reads it through getenv; setEmpty says $OPENCTL_STATE_PASSPHRASE
// is set but empty, when that is known.
func passphrase(getenv func(string) string, setEmpty bool) (secret.Secret, error) {
	if v := getenv(EnvPassphrase); v != "" {
		return secret.New(v), nil
	}
	path := getenv(EnvPassphraseFile)
	if path == "" {
		if setEmpty {
			return secret.Secret{}, errcode.New(errcode.Invalid, "seal: "+EnvPassphrase+" is set but empty; set it to the state passphrase, or set "+EnvPassphraseFile+" to a file holding it")
		}
		return secret.Secret{}, errcode.New(errcode.Invalid, "seal: no state passphrase: set "+EnvPassphrase+" to the passphrase, or "+EnvPassphraseFile+" to a file holding it")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return secret.Secret{}, errcode.Wrap(errcode.Invalid, "seal: reading the state passphrase ("+EnvPassphraseFile+")", err)
	}
	s := string(data)
	clear(data)
	if strings.HasSuffix(s, "\r\n") {
		s = s[:len(s)-2]
	} else {
		s = strings.TrimSuffix(s, "\n")
	}
	if s == "" {
		return secret.Secret{}, errcode.New(errcode.Invalid, "seal: the state passphrase file "+path+" ("+EnvPassphraseFile+") is empty")
	}
	return secret.New(s), nil
}

// PassphraseOnce returns a function that asks get (nil: [Passphrase]) for the
// passphrase the first time it is called and returns that same answer —
// the passphrase, or the error, an empty passphrase being an Invalid error —
// every time after. It is safe for concurrent use; stores use it so that a
// passphrase prompt or file read happens at most once per store.
func PassphraseOnce(get func() (secret.Secret, error)) func() (secret.Secret, error) {
	if get == nil {
		get = Passphrase
	}
	return sync.OnceValues(func() (secret.Secret, error) {
		p, err := get()
		if err == nil && p.IsZero() {
			err = errcode.New(errcode.Invalid, fmt.Sprintf("seal: the state passphrase is empty (%s / %s)", EnvPassphrase, EnvPassphraseFile))
		}
		return p, err
	})
}

// MinPassphraseLength is the shortest passphrase, in characters, that
// stores use without a warning. The passphrase is all that protects the
// sealed secrets of a copied state directory or database dump: PBKDF2
// slows guessing down, but a passphrase of a few characters is still
// found in hours. Twelve random characters, or four random words, are out
// of reach.
//
// A shorter passphrase is a warning, not an error, so that state sealed
// with one stays readable: change it by moving the state to a store
// sealed with a longer one.
const MinPassphraseLength = 12

// WeakPassphrase reports why p is too short to protect the state ("" when
// it is long enough: MinPassphraseLength characters or more). The message
// gives the length, never the passphrase.
func WeakPassphrase(p secret.Secret) string {
	n := utf8.RuneCountInString(p.Reveal())
	if n >= MinPassphraseLength || n == 0 {
		return ""
	}
	return fmt.Sprintf("the state passphrase (%s / %s) has %d characters, fewer than %d: the sealed secrets of a copy of the state could be found by guessing; use a longer one", EnvPassphrase, EnvPassphraseFile, n, MinPassphraseLength)
}

// WarnWeak returns a function that calls get (nil: [Passphrase]) and,
// when the passphrase it returns is too short (see [WeakPassphrase]),
// logs a warning to log. Stores wrap their passphrase function with it;
// since they ask at most once, they warn at most once.
func WarnWeak(get func() (secret.Secret, error), log *slog.Logger) func() (secret.Secret, error) {
	if get == nil {
		get = Passphrase
	}
	return func() (secret.Secret, error) {
		p, err := get()
		if err == nil && log != nil {
			if w := WeakPassphrase(p); w != "" {
				log.Warn("seal: " + w)
			}
		}
		return p, err
	}
}
