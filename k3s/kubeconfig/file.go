package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
)

// Write writes the kubeconfig data to path atomically: into a temporary
// file in path's directory, synced, then renamed over path, so a reader
// sees the old file or the new one, never a part. The file's mode is 0600
// whatever it was before; missing directories are created with mode 0700.
// When path is a symbolic link, the file it points to is replaced and the
// link kept. data must decode as a kubeconfig (errcode.Invalid otherwise);
// a failure to write matches errcode.Internal and leaves path as it was.
// Write replaces the whole file and takes no lock: to change a file that
// kubectl or others also write, use Merge.
func Write(path string, data []byte) error {
	if _, err := load(data); err != nil {
		return err
	}
	return writeFile(path, data)
}

// Merge merges the kubeconfig data into the kubeconfig file at path
// (typically ~/.kube/config), as "kubectl config view --merge --flatten"
// would with data winning, but keeping the file's choice of context:
//
//   - every cluster, user and context of data replaces the file's entry of
//     the same name, or is added;
//   - every other entry of the file is kept as it was, and so are its
//     preferences and extensions;
//   - the file's current-context is kept; only when it has none does it
//     become data's current-context.
//
// A missing file (and its directories, 0700) is created. The result is
// written as Write does: atomically, mode 0600. Comments and the file's
// formatting are not kept (kubectl does not keep them either). data must
// be a kubeconfig with at least one context, and the file, when it exists,
// must be a kubeconfig: otherwise Merge changes nothing and returns an
// error matching errcode.Invalid.
//
// Merge and Remove take the file's lock as kubectl does (path + ".lock",
// created exclusively, removed after), waiting up to a few seconds for
// another writer (or until ctx ends) before failing with
// errcode.Conflict; calls in one process are serialised.
func Merge(ctx context.Context, path string, data []byte) error {
	in, err := load(data)
	if err != nil {
		return err
	}
	if len(in.Contexts) == 0 {
		return errcode.New(errcode.Invalid, "kubeconfig: merge: the kubeconfig has no context")
	}
	return update(ctx, path, func(cfg *clientcmdapi.Config) bool {
		for k, v := range in.Clusters {
			cfg.Clusters[k] = v
		}
		for k, v := range in.AuthInfos {
			cfg.AuthInfos[k] = v
		}
		for k, v := range in.Contexts {
			cfg.Contexts[k] = v
		}
		if cfg.CurrentContext == "" {
			cfg.CurrentContext = in.CurrentContext
		}
		return true
	})
}

// Remove removes the cluster, the user and the context named name from the
// kubeconfig file at path, as when the cluster Merge added is deleted.
// Every other entry is kept, even one that refers to a removed entry by
// name; the current-context is cleared when it was name. A missing file,
// or one without any entry named name, is left untouched and is no error.
// The file is rewritten, and locked, as Merge does; a file that is not a
// kubeconfig is an error matching errcode.Invalid.
func Remove(ctx context.Context, path, name string) error {
	if name == "" {
		return errcode.New(errcode.Invalid, "kubeconfig: remove: empty name")
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil // nothing to remove, and no directory to create for the lock
	}
	return update(ctx, path, func(cfg *clientcmdapi.Config) bool {
		_, c := cfg.Clusters[name]
		_, u := cfg.AuthInfos[name]
		_, x := cfg.Contexts[name]
		cur := cfg.CurrentContext == name
		if !c && !u && !x && !cur {
			return false
		}
		delete(cfg.Clusters, name)
		delete(cfg.AuthInfos, name)
		delete(cfg.Contexts, name)
		if cur {
			cfg.CurrentContext = ""
		}
		return true
	})
}

// fileMu serialises Merge and Remove within the process; the lock file
// serialises them with other processes.
var fileMu sync.Mutex

// How long to wait for another holder of the lock file (a variable for
// the tests alone), and how often to look again.
var (
	lockWait = 5 * time.Second
	lockPoll = backoff.Policy{Initial: 10 * time.Millisecond, Max: 250 * time.Millisecond, Jitter: 0.3}
)

// update loads the kubeconfig at path (empty when missing), lets change
// edit it, and writes it back when change reports a change. A missing
// file stays missing when nothing changed.
func update(ctx context.Context, path string, change func(*clientcmdapi.Config) bool) error {
	fileMu.Lock()
	defer fileMu.Unlock()
	// The lock is named after path as given, symbolic link or not, as
	// kubectl names it; the file read and replaced is the link's target.
	unlock, err := lock(ctx, path)
	if err != nil {
		return err
	}
	defer unlock()
	target, err := resolve(path)
	if err != nil {
		return err
	}

	cfg := clientcmdapi.NewConfig()
	b, err := os.ReadFile(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	default:
		if cfg, err = decode(b); err != nil {
			return errcode.Wrap(errcode.Invalid, fmt.Sprintf("kubeconfig: %s is not a kubeconfig; left untouched", path), err)
		}
	}
	if !change(cfg) {
		return nil
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig: encoding", err)
	}
	return writeFile(target, out)
}

// lock takes path's kubectl-style lock file, waiting for another holder
// for up to lockWait, or until ctx ends.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	name := path + ".lock"
	deadline := time.Now().Add(lockWait)
	wait := lockPoll.Start()
	for {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(name) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, errcode.Wrap(errcode.Internal, "kubeconfig: lock", err)
		}
		if time.Now().After(deadline) {
			return nil, errcode.New(errcode.Conflict, fmt.Sprintf("kubeconfig: %s exists: another kubectl or openctl is writing %s (remove the lock file if no one is)", name, path))
		}
		if err := backoff.Sleep(ctx, min(wait.Next(), time.Until(deadline)+time.Millisecond)); err != nil {
			return nil, err
		}
	}
}

// resolve returns the file path names: path itself, or, when path is a
// symbolic link, the file it points to (which need not exist yet).
func resolve(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", errcode.Wrap(errcode.Internal, "kubeconfig", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", errcode.Wrap(errcode.Internal, "kubeconfig", err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", errcode.New(errcode.Invalid, fmt.Sprintf("kubeconfig: %s: too many symbolic links", path))
}

// writeFile writes data to path (following a symbolic link) through a
// temporary file in the same directory and a rename; mode 0600,
// directories 0700.
func writeFile(path string, data []byte) (err error) {
	target, err := resolve(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	if _, err := f.Write(data); err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	if err := f.Sync(); err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	if err := f.Close(); err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	if err := os.Rename(f.Name(), target); err != nil {
		return errcode.Wrap(errcode.Internal, "kubeconfig", err)
	}
	// Make the rename durable; a directory that cannot be synced (some
	// file systems) is not worth failing for once the file is in place.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
