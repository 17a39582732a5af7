package state

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// Backend opens state stores of one kind, named by a DSN whose scheme
// (the part before the first ':') says which kind: "file:DIR" for the
// file store ([FileBackend]), "postgres://…" for the PostgreSQL store
// (state/postgres.Backend). Like a database/sql driver, a Backend is
// registered explicitly in a [Backends] set by the program that wants it;
// nothing registers itself.
//
// A Backend must be safe for concurrent use.
type Backend interface {
	// Schemes lists the DSN schemes it serves, in lower case: "file" for
	// file:DIR; "postgres" and "postgresql" for PostgreSQL URLs.
	Schemes() []string
	// Open opens the store the DSN names; the DSN is passed whole, scheme
	// included. A store that holds resources (connections) implements
	// io.Closer, and the caller closes it when done. Errors never show a
	// password the DSN holds.
	Open(ctx context.Context, dsn string, opts OpenOptions) (Store, error)
}

// OpenOptions are what a Backend passes on to the store it opens.
type OpenOptions struct {
	// Passphrase returns the passphrase that seals the store's data key,
	// asked for at most once, when a record with secrets is first read or
	// written. Nil means seal.Passphrase: $OPENCTL_STATE_PASSPHRASE, else
	// the file $OPENCTL_STATE_PASSPHRASE_FILE names.
	Passphrase func() (secret.Secret, error)
	// Logger receives the store's warnings; nil discards them.
	Logger *slog.Logger
}

// pgScheme is the scheme of a DSN without one that holds a '=': a libpq
// key=value DSN such as "host=db dbname=openctl".
const pgScheme = "postgres"

// Backends is a set of backends by DSN scheme. Its zero value is empty
// and ready to use; it is safe for concurrent use.
//
//	var stores state.Backends
//	if err := stores.Register(state.FileBackend{}, postgres.Backend{}); err != nil { ... }
//	st, err := stores.Open(ctx, "postgres://openctl@db:5432/openctl", state.OpenOptions{})
type Backends struct {
	mu       sync.RWMutex       // guards byScheme
	byScheme map[string]Backend // by lower-case scheme
}

// Register adds backends to the set, each under all of its schemes. A
// nil backend, one without schemes, a scheme that is empty or not a
// valid URL scheme, or a scheme already registered (or served twice by
// the call) is an errcode.Invalid error, and then none of bs is
// registered.
func (b *Backends) Register(bs ...Backend) error {
	if b == nil {
		return errcode.New(errcode.Invalid, "state: Register on a nil *Backends")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	adding := map[string]Backend{}
	for i, be := range bs {
		if be == nil {
			return errcode.New(errcode.Invalid, fmt.Sprintf("state: backend %d is nil", i))
		}
		schemes := be.Schemes()
		if len(schemes) == 0 {
			return errcode.New(errcode.Invalid, fmt.Sprintf("state: backend %T serves no scheme", be))
		}
		for _, s := range schemes {
			if !validScheme(s) {
				return errcode.New(errcode.Invalid, fmt.Sprintf("state: backend %T: %q is not a DSN scheme (a letter, then letters, digits, '+', '-' or '.')", be, s))
			}
			key := strings.ToLower(s)
			if _, dup := b.byScheme[key]; dup {
				return errcode.New(errcode.Invalid, fmt.Sprintf("state: backend %T: scheme %q is already registered", be, key))
			}
			if _, dup := adding[key]; dup {
				return errcode.New(errcode.Invalid, fmt.Sprintf("state: backend %T: scheme %q is served twice", be, key))
			}
			adding[key] = be
		}
	}
	if b.byScheme == nil {
		b.byScheme = make(map[string]Backend, len(adding))
	}
	for s, be := range adding {
		b.byScheme[s] = be
	}
	return nil
}

// Schemes returns the registered schemes, sorted.
func (b *Backends) Schemes() []string {
	if b == nil {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	schemes := make([]string, 0, len(b.byScheme))
	for s := range b.byScheme {
		schemes = append(schemes, s)
	}
	slices.Sort(schemes)
	return schemes
}

// Open opens the store dsn names with the backend registered for its
// scheme (compared without regard to case). A DSN without a scheme that
// holds a '=' is a libpq key=value DSN ("host=db dbname=openctl") and
// goes to the "postgres" backend. A DSN whose scheme no backend serves,
// or that has none, is an errcode.Invalid error that lists the registered
// schemes and shows the DSN with its password masked (MaskDSN); other
// errors are the backend's.
func (b *Backends) Open(ctx context.Context, dsn string, opts OpenOptions) (Store, error) {
	scheme, ok := schemeOf(dsn)
	if !ok {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: cannot tell what store %q is: want SCHEME:..., one of %s (file:DIR, postgres://user@host:5432/db), or a PostgreSQL key=value DSN (host=... dbname=...)", MaskDSN(dsn), b.schemeList()))
	}
	var be Backend
	if b != nil {
		b.mu.RLock()
		be = b.byScheme[scheme]
		b.mu.RUnlock()
	}
	if be == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: no backend for the %q scheme of %q; registered: %s", scheme, MaskDSN(dsn), b.schemeList()))
	}
	return be.Open(ctx, dsn, opts)
}

// schemeList returns the registered schemes for messages.
func (b *Backends) schemeList() string {
	s := b.Schemes()
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// schemeOf returns the lower-case scheme of dsn — what comes before its
// first ':' when that is a valid URL scheme — or "postgres" for a DSN
// without one that holds a '=' (a libpq key=value DSN). ok is false when
// dsn has neither.
func schemeOf(dsn string) (scheme string, ok bool) {
	if i := strings.IndexByte(dsn, ':'); i > 0 && validScheme(dsn[:i]) {
		return strings.ToLower(dsn[:i]), true
	}
	if strings.Contains(dsn, "=") {
		return pgScheme, true
	}
	return "", false
}

// validScheme reports whether s is a URL scheme (RFC 3986): a letter,
// then letters, digits, '+', '-' or '.'.
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// FileBackend is the Backend of the file store (OpenFile), serving the
// "file" scheme:
//
//	file:DIR         DIR, relative to the working directory unless absolute
//	file:///abs/dir  /abs/dir: "file://" is the same as "file:"
//	file:~/dir       dir under the user's home directory
//
// No host part and no %-escapes are recognised: the rest of the DSN is
// the directory's path. An empty directory is an errcode.Invalid error.
// The store it opens holds no resources and is not an io.Closer. A
// FileBackend is safe for concurrent use.
type FileBackend struct{}

var _ Backend = FileBackend{}

// Schemes returns "file".
func (FileBackend) Schemes() []string { return []string{"file"} }

// Open opens the file store in the directory dsn names.
func (FileBackend) Open(_ context.Context, dsn string, opts OpenOptions) (Store, error) {
	dir, err := fileDir(dsn)
	if err != nil {
		return nil, err
	}
	return OpenFile(dir, FileOptions{Passphrase: opts.Passphrase, Logger: opts.Logger})
}

// fileDir returns the directory a file DSN names (see FileBackend),
// with "~" expanded. A DSN whose scheme is not "file" or that names no
// directory is an errcode.Invalid error.
func fileDir(dsn string) (string, error) {
	scheme, ok := schemeOf(dsn)
	if !ok || scheme != "file" {
		return "", errcode.New(errcode.Invalid, fmt.Sprintf("state: %q is not a file DSN: want file:DIR", MaskDSN(dsn)))
	}
	dir := strings.TrimPrefix(dsn[len("file:"):], "//")
	if dir == "" {
		return "", errcode.New(errcode.Invalid, fmt.Sprintf("state: %q names no directory: want file:DIR", dsn))
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errcode.Wrap(errcode.Invalid, fmt.Sprintf("state: %q: no home directory to expand ~ in", dsn), err)
		}
		dir = filepath.Join(home, dir[1:])
	}
	return dir, nil
}

// kvPassword matches the value of a password (or sslpassword) keyword in
// a key=value DSN: a single-quoted value (with \' and \\ escapes) or a
// run of non-space characters.
var kvPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)`)

// masked replaces passwords in MaskDSN's output.
const masked = "xxxxx"

// MaskDSN returns dsn with any password replaced by "xxxxx", for messages:
// in URL form (scheme://user:password@host/...?password=...) the
// password of the user information and the value of every query
// parameter whose name holds "password"; in key=value form
// (host=db password=secret) the value of password and sslpassword. A
// URL that does not parse is replaced as a whole. DSNs without passwords
// (file:DIR) are returned unchanged.
func MaskDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i > 0 && validScheme(dsn[:i]) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "<a " + strings.ToLower(dsn[:i]) + " DSN that does not parse>"
		}
		if u.RawQuery != "" {
			q := u.Query()
			changed := false
			for k := range q {
				if strings.Contains(strings.ToLower(k), "password") {
					q[k] = []string{masked}
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
		return u.Redacted()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}"+masked)
}
