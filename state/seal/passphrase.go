package seal

import (
	"fmt"
	"os"
	"strings"
	"sync"

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
	v, set := os.LookupEnv(EnvPassphrase)
	if v != "" {
		return secret.New(v), nil
	}
	path := os.Getenv(EnvPassphraseFile)
	if path == "" {
		if set {
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
