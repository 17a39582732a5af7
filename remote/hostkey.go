package remote

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/openctl/openctl/errcode"
)

// HostKeys says which host keys a connection accepts. A host key is
// always verified: with neither a pin nor a known_hosts entry the host is
// refused, unless TrustOnFirstUse is set.
type HostKeys struct {
	// Pinned are the host's public keys in authorized_keys form
	// ("ssh-ed25519 AAAA… comment"): for a Proxmox VM the key its guest
	// agent reported, for an existing host the one the user wrote down.
	// When set, only these keys are accepted and known_hosts is not
	// read.
	Pinned []string
	// KnownHosts are known_hosts files to consult when nothing is pinned,
	// in OpenSSH's format (hashed names and markers included); a leading
	// ~/ is the home directory. Files that do not exist are skipped.
	KnownHosts []string
	// TrustOnFirstUse accepts the key of a host the known_hosts files do
	// not know, records it in the first of them (created 0600) and logs a
	// warning. A key that differs from a known or pinned one is refused
	// regardless.
	TrustOnFirstUse bool
}

// DefaultKnownHosts returns ~/.ssh/known_hosts, or nil without a home
// directory.
func DefaultKnownHosts() []string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return nil
	}
	return []string{filepath.Join(home, ".ssh", "known_hosts")}
}

// HostKeyError reports a host key that was refused: unknown (nothing pins
// or knows it) or changed (it differs from the pinned or known key). It
// matches errcode.Invalid: the user must act, retrying does not help.
type HostKeyError struct {
	// Host is the address dialled, host:port.
	Host string
	// Key is the key the host presented.
	Key ssh.PublicKey
	// Changed is true when the key differs from a pinned or known one;
	// false when the host is unknown.
	Changed bool
	// Known names where the expected key comes from: "the pinned key" or
	// "known_hosts file:line".
	Known string
}

// Fingerprint is the presented key's SHA-256 fingerprint, as OpenSSH
// prints it.
func (e *HostKeyError) Fingerprint() string { return ssh.FingerprintSHA256(e.Key) }

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("remote: %s: the host key has CHANGED: it presents %s %s, which does not match %s. "+
			"Someone may be intercepting the connection, or the host was reinstalled: check the key on the host's console "+
			"(ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub) before replacing the old one",
			e.Host, e.Key.Type(), e.Fingerprint(), e.Known, strings.TrimPrefix(e.Key.Type(), "ssh-"))
	}
	return fmt.Sprintf("remote: %s: unknown host key %s %s: pin it (the host's sshHostKey: %q), "+
		"add it to known_hosts after checking it on the host's console (ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), "+
		"or set trustOnFirstUse: true to record it on first use",
		e.Host, e.Key.Type(), e.Fingerprint(), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(e.Key))), strings.TrimPrefix(e.Key.Type(), "ssh-"))
}

// Is reports whether target is errcode.Invalid.
func (e *HostKeyError) Is(target error) bool { return target == errcode.Invalid }

// verifier checks host keys for one HostKeys.
type verifier struct {
	keys HostKeys
	log  *slog.Logger
	// mu serialises trust-on-first-use writes to the known_hosts file.
	mu *sync.Mutex
}

// pinned parses the pinned keys.
func (k HostKeys) pinned() ([]ssh.PublicKey, error) {
	var out []ssh.PublicKey
	for i, s := range k.Pinned {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s))
		if err != nil {
			return nil, errcode.Wrap(errcode.Invalid, fmt.Sprintf("remote: pinned host key %d", i+1), err)
		}
		out = append(out, key)
	}
	return out, nil
}

// files returns the known_hosts files, ~/ expanded.
func (k HostKeys) files() ([]string, error) {
	out := make([]string, 0, len(k.KnownHosts))
	for _, f := range k.KnownHosts {
		p, err := expandHome(f)
		if err != nil {
			return nil, errcode.Wrap(errcode.Invalid, "remote: known_hosts", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// existing returns the known_hosts files that exist.
func (k HostKeys) existing() ([]string, error) {
	files, err := k.files()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		_, err := os.Stat(f)
		switch {
		case err == nil:
			out = append(out, f)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, errcode.Wrap(errcode.Invalid, "remote: known_hosts", err)
		}
	}
	return out, nil
}

// callback returns the host key callback for addr and the host key
// algorithms to ask for, so that the server presents the kind of key that
// is pinned or known (else a host with several keys could present
// another one and look changed).
func (v *verifier) callback(addr string) (ssh.HostKeyCallback, []string, error) {
	pins, err := v.keys.pinned()
	if err != nil {
		return nil, nil, err
	}
	if len(pins) > 0 {
		return func(_ string, _ net.Addr, key ssh.PublicKey) error {
			for _, p := range pins {
				if keyEqual(p, key) {
					return nil
				}
			}
			return &HostKeyError{Host: addr, Key: key, Changed: true, Known: "the pinned key"}
		}, algorithms(pins), nil
	}
	files, err := v.keys.existing()
	if err != nil {
		return nil, nil, err
	}
	var db ssh.HostKeyCallback
	var known []ssh.PublicKey
	if len(files) > 0 {
		if db, err = knownhosts.New(files...); err != nil {
			return nil, nil, errcode.Wrap(errcode.Invalid, "remote: known_hosts", err)
		}
		// Asking with a key no file holds lists the keys that are known.
		var ke *knownhosts.KeyError
		if errors.As(db(addr, &net.TCPAddr{}, probeKey{}), &ke) {
			for _, w := range ke.Want {
				known = append(known, w.Key)
			}
		}
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		if db != nil {
			err := db(hostname, remote, key)
			var ke *knownhosts.KeyError
			var re *knownhosts.RevokedError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &re):
				return errcode.Wrap(errcode.Invalid, fmt.Sprintf("remote: %s: host key %s is revoked", addr, ssh.FingerprintSHA256(key)), err)
			case errors.As(err, &ke) && len(ke.Want) > 0:
				return &HostKeyError{Host: addr, Key: key, Changed: true, Known: fmt.Sprintf("known_hosts %s:%d", ke.Want[0].Filename, ke.Want[0].Line)}
			case !errors.As(err, &ke):
				return errcode.Wrap(errcode.Invalid, "remote: "+addr+": known_hosts", err)
			}
		}
		if !v.keys.TrustOnFirstUse || len(v.keys.KnownHosts) == 0 {
			return &HostKeyError{Host: addr, Key: key}
		}
		return v.trust(addr, key)
	}
	return cb, algorithms(known), nil
}

// trust records key for addr in the first known_hosts file.
func (v *verifier) trust(addr string, key ssh.PublicKey) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	files, err := v.keys.files()
	if err != nil {
		return err
	}
	file := files[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return errcode.Wrap(errcode.Internal, "remote: recording the host key", err)
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "remote: recording the host key", err)
	}
	_, werr := fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(addr)}, key))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return errcode.Wrap(errcode.Internal, "remote: recording the host key", werr)
	}
	v.log.Warn("trusting an unknown SSH host key on first use", "host", addr, "key", key.Type()+" "+ssh.FingerprintSHA256(key), "recorded in", file)
	return nil
}

// algorithms returns the host key algorithms that yield keys of these
// types; nil (the library's default order) when keys is empty.
func algorithms(keys []ssh.PublicKey) []string {
	var out []string
	add := func(a string) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, k := range keys {
		if k.Type() == ssh.KeyAlgoRSA {
			add(ssh.KeyAlgoRSASHA512)
			add(ssh.KeyAlgoRSASHA256)
		}
		add(k.Type())
	}
	return out
}

func keyEqual(a, b ssh.PublicKey) bool {
	return a.Type() == b.Type() && string(a.Marshal()) == string(b.Marshal())
}

// probeKey is a key no known_hosts file holds.
type probeKey struct{}

func (probeKey) Type() string                        { return "openctl-probe" }
func (probeKey) Marshal() []byte                     { return []byte("openctl-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe key") }
