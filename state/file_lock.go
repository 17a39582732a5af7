package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
)

// unlockTimeout bounds how long an unlock function (which has no context)
// waits for the flock guarding lock files.
const unlockTimeout = 30 * time.Second

// flockPolicy spaces the tries of flockFile: 50 µs doubling to 10 ms.
var flockPolicy = backoff.Policy{Initial: 50 * time.Microsecond, Max: 10 * time.Millisecond}

// flockFile opens (creating, 0600) the lock file path and takes an
// exclusive flock on it, waiting with backoff (flockPolicy) while another
// process holds it, until ctx is done. When the next wait would pass ctx's
// deadline it gives up with an errcode.Transient error. The returned
// function releases it.
func flockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: opening lock file "+path, err)
	}
	deadline, _ := ctx.Deadline()
	b := flockPolicy.Start()
	for {
		busy, err := tryFlock(f)
		if err != nil {
			f.Close()
			return nil, errcode.Wrap(errcode.Internal, "state: locking "+path, err)
		}
		if !busy {
			return func() {
				_ = unflock(f)
				f.Close()
			}, nil
		}
		wait := b.Next()
		if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
			f.Close()
			return nil, errcode.New(errcode.Transient, "state: timed out waiting for "+path+" (another openctl process holds it)")
		}
		if err := backoff.Sleep(ctx, wait); err != nil {
			f.Close()
			return nil, fmt.Errorf("state: waiting for %s: %w", path, err)
		}
	}
}

// lockPath returns the lock file of scope, which must be a plain name.
func (s *FileStore) lockPath(scope string) (string, error) {
	if !validScope(scope) {
		return "", errcode.New(errcode.Invalid, fmt.Sprintf("state: lock scope %q is not a plain name (letters, digits, '.', '_' and '-', at most 128, not starting with '.')", scope))
	}
	return filepath.Join(s.dir, locksDir, scope+".lock"), nil
}

// validScope reports whether scope can name a lock file.
func validScope(scope string) bool {
	if scope == "" || len(scope) > 128 || scope[0] == '.' {
		return false
	}
	for _, c := range scope {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// lockScopes takes the lock serialising lock-file changes: this process's
// mutex, then the scopes flock, waiting until ctx is done.
func (s *FileStore) lockScopes(ctx context.Context) (func(), error) {
	s.scopeMu.Lock()
	release, err := flockFile(ctx, filepath.Join(s.dir, locksDir, scopesFlock))
	if err != nil {
		s.scopeMu.Unlock()
		return nil, err
	}
	return func() {
		release()
		s.scopeMu.Unlock()
	}, nil
}

// Lock takes the lock on scope by creating <dir>/locks/<scope>.lock holding
// info as YAML. If the file exists, Lock returns a *LockedError naming the
// holder it records, with Stale set when that holder is a process of this
// host that no longer runs; a lock file that cannot be read still means
// locked (Detail names the file). A lock whose holder is provably dead —
// it ran on this host in this boot and its pid no longer runs
// (HolderDead) — is removed with a warning to the store's logger and
// taken; Lock never breaks any other lock: see ForceUnlock.
//
// The lock file appears atomically with its contents: they are written to
// a temporary file that is then hard-linked to the lock file's name, which
// fails if the name exists (like O_CREATE|O_EXCL, but a reader never sees
// an empty lock file, even after a crash).
func (s *FileStore) Lock(ctx context.Context, scope string, info LockInfo) (func() error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := s.lockPath(scope)
	if err != nil {
		return nil, err
	}
	if info.ID == "" {
		info.ID = NewID()
	}
	info.Scope = scope
	if info.Created.IsZero() {
		info.Created = time.Now().UTC()
	}
	data, err := yaml.Marshal(info)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: encoding lock info", err)
	}
	release, err := s.lockScopes(ctx)
	if err != nil {
		return nil, err
	}
	defer release()

	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+tmpSuffix)
	if err := writeTemp(tmp, data); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: writing lock file "+path, err)
	}
	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		// A lock whose holder is provably dead is cleared, once: the
		// scopes flock keeps every other Lock, unlock and ForceUnlock out
		// meanwhile.
		var cleared bool
		if cleared, err = s.clearDead(scope, path); err == nil && cleared {
			err = os.Link(tmp, path)
		} else if err == nil {
			err = fs.ErrExist
		}
	}
	_ = os.Remove(tmp)
	if errors.Is(err, fs.ErrExist) {
		return nil, s.lockedError(scope, path)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: creating lock file "+path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		_ = os.Remove(path)
		return nil, errcode.Wrap(errcode.Internal, "state: creating lock file "+path, err)
	}
	var (
		once sync.Once
		uerr error
		// unlock has no context of its own and must work after ctx ends.
		base = context.WithoutCancel(ctx)
	)
	return func() error {
		once.Do(func() { uerr = s.unlock(base, scope, path, info.ID) })
		return uerr
	}, nil
}

// writeTemp writes data to a new or truncated file at path (0600) and
// fsyncs it.
func writeTemp(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// readLock reads the lock file path.
func readLock(path string) (LockInfo, error) {
	var info LockInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if len(data) == 0 {
		return info, errors.New("it is empty")
	}
	if err := yaml.Unmarshal(data, &info); err != nil {
		return info, err
	}
	if info.ID == "" {
		return info, errors.New("it names no lock ID")
	}
	return info, nil
}

// lockedError describes the lock file path of scope, which exists.
func (s *FileStore) lockedError(scope, path string) error {
	info, err := readLock(path)
	if err != nil {
		return &LockedError{Scope: scope, Holder: info, Detail: fmt.Sprintf("its lock file %s cannot be read (%v); if no openctl holds this lock, remove it with `openctl state force-unlock %s`", path, err, scope)}
	}
	le := &LockedError{Scope: scope, Holder: info}
	if info.Status() == HolderGone {
		le.Stale = true
		le.Detail = "lock file " + path
	}
	return le
}

// clearDead removes the lock file path of scope if its holder is provably
// dead (HolderDead), with a warning naming it, and reports whether it did.
// The scopes flock must be held.
func (s *FileStore) clearDead(scope, path string) (bool, error) {
	info, err := readLock(path)
	if err != nil || info.Status() != HolderDead {
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, errcode.Wrap(errcode.Internal, "state: removing the stale lock file "+path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return false, errcode.Wrap(errcode.Internal, "state: removing the stale lock file "+path, err)
	}
	s.log.Warn("state: cleared a stale lock: its holder no longer runs on this host (crashed or killed?); check that what it was doing is complete",
		"scope", scope, "file", path, "who", info.Who, "host", info.Host, "pid", info.PID, "operation", info.Operation, "created", info.Created)
	return true, nil
}

// unlock removes the lock file of scope if it still holds lock id,
// waiting up to unlockTimeout for the scopes flock; base is the context
// of the Lock call, without its cancellation.
func (s *FileStore) unlock(base context.Context, scope, path, id string) error {
	ctx, cancel := context.WithTimeout(base, unlockTimeout)
	defer cancel()
	release, err := s.lockScopes(ctx)
	if err != nil {
		return err
	}
	defer release()
	info, err := readLock(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.log.Warn("state: our lock was removed by someone else (force-unlocked?)", "scope", scope, "file", path)
		return nil
	case err != nil || info.ID != id:
		s.log.Warn("state: our lock was replaced by someone else's (force-unlocked?); leaving it", "scope", scope, "file", path)
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errcode.Wrap(errcode.Internal, "state: removing lock file "+path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return errcode.Wrap(errcode.Internal, "state: removing lock file "+path, err)
	}
	return nil
}

// ForceUnlock breaks the lock on scope by removing its lock file; a scope
// that is not locked is not an error. It refuses, with a *LockedError that
// has Running set and names the holder, when the holder is a process of
// this host that still runs (HolderRunning), unless opts.Force is set. Use
// it only when the holder is known to be gone or stuck: a holder that is
// alive goes on working unprotected. The broken lock's holder is logged as
// a warning.
func (s *FileStore) ForceUnlock(ctx context.Context, scope string, opts ForceUnlockOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := s.lockPath(scope)
	if err != nil {
		return err
	}
	release, err := s.lockScopes(ctx)
	if err != nil {
		return err
	}
	defer release()
	info, rerr := readLock(path)
	if errors.Is(rerr, fs.ErrNotExist) {
		return nil
	}
	if rerr == nil && !opts.Force && info.Status() == HolderRunning {
		return &LockedError{Scope: scope, Holder: info, Running: true, Detail: "lock file " + path}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errcode.Wrap(errcode.Internal, "state: removing lock file "+path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return errcode.Wrap(errcode.Internal, "state: removing lock file "+path, err)
	}
	s.log.Warn("state: lock broken by force-unlock", "scope", scope, "file", path,
		"who", info.Who, "host", info.Host, "pid", info.PID, "operation", info.Operation, "created", info.Created)
	return nil
}
