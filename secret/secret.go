// Package secret provides [Secret], a string that keeps itself out of
// output: it prints as "[redacted]" through fmt (every verb), encoding/json,
// gopkg.in/yaml.v3, encoding.TextMarshaler users and log/slog, unless the
// holder explicitly calls [Secret.Reveal].
//
//	token := secret.New(os.Getenv("TOKEN"))
//	log.Printf("using %v", token) // using [redacted]
//	req.Header.Set("Authorization", token.Reveal())
package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
)

// Redacted is what a Secret prints as.
const Redacted = "[redacted]"

// Secret holds a sensitive string. The zero value is the empty secret.
// Secrets are immutable values, safe to copy and to share between
// goroutines.
type Secret struct {
	v string
}

// New returns a Secret holding s.
func New(s string) Secret { return Secret{v: s} }

// Reveal returns the secret value. Call it only where the value must leave
// the program: an HTTP header, a file written 0600, a sealed record.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// Equal reports whether two secrets hold the same value.
func (s Secret) Equal(o Secret) bool { return s.v == o.v }

// String returns "[redacted]" ("" for the empty secret would leak that it is
// empty, so it is redacted too).
func (s Secret) String() string { return Redacted }

// GoString redacts %#v.
func (s Secret) GoString() string { return "secret.Secret{" + Redacted + "}" }

// Format redacts every fmt verb, including %x and %q.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprint(f, Redacted)
}

// MarshalJSON writes "[redacted]".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText writes [redacted]; encoders that use encoding.TextMarshaler
// (map keys, XML, many YAML and TOML libraries) redact too.
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// MarshalYAML writes [redacted] (gopkg.in/yaml.v3's Marshaler).
func (s Secret) MarshalYAML() (any, error) { return Redacted, nil }

// UnmarshalText sets the secret from text, so that configuration files
// (YAML, and JSON through UnmarshalJSON) can hold secrets. The redaction
// placeholder itself is refused: it means a redacted document was fed back.
func (s *Secret) UnmarshalText(b []byte) error {
	if string(b) == Redacted {
		return errRedacted
	}
	s.v = string(b)
	return nil
}

// UnmarshalJSON sets the secret from a JSON string.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("secret: want a JSON string")
	}
	return s.UnmarshalText([]byte(v))
}

var errRedacted = errors.New("secret: the value is the redaction placeholder " + Redacted + ", not a secret: give the real value")

// LogValue redacts the secret in log/slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }
