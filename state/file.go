package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state/seal"
)

// EnvHome names the environment variable that moves openctl's home
// directory (default ~/.openctl); the file store lives in its "state"
// subdirectory.
const EnvHome = "OPENCTL_HOME"

// FileOptions configures a FileStore.
type FileOptions struct {
	// Passphrase returns the passphrase that seals the store's data key.
	// It is called at most once per FileStore, lazily: the first time a
	// record with secrets is written or read. A store whose records carry
	// no secrets never calls it. Nil means seal.Passphrase
	// (OPENCTL_STATE_PASSPHRASE, else OPENCTL_STATE_PASSPHRASE_FILE).
	Passphrase func() (secret.Secret, error)
	// Logger receives warnings (a key file others can read, a broken
	// lock). Nil discards them.
	Logger *slog.Logger
}

// FileStore is the default Store: one YAML file per record under a
// directory, secrets sealed, written atomically, with lock files for
// scopes. See the package documentation for the layout and guarantees.
//
// A FileStore is safe for concurrent use by goroutines, and several
// processes (each with its own FileStore) may share one directory on a
// local file system.
type FileStore struct {
	dir  string         // absolute
	log  *slog.Logger   // never nil
	keys *seal.Unlocker // unlocks the data key once

	writeMu sync.Mutex // serialises this process's record writes (the records flock serialises processes)
	scopeMu sync.Mutex // serialises this process's lock-file changes (the scopes flock serialises processes)

	keyMu   sync.Mutex    // guards keyFile and keyStat
	keyFile *seal.KeyFile // the key file last read, nil before
	keyStat os.FileInfo   // the stat of the file keyFile was read from
}

var (
	_ RawStore        = (*FileStore)(nil)
	_ IdentityAdopter = (*FileStore)(nil)
	_ Unlocker        = (*FileStore)(nil)
)

// File and directory names inside a FileStore's directory.
const (
	keyFileName  = "key.yaml"
	locksDir     = "locks"
	recordsFlock = ".records" // in locksDir: serialises record writes
	scopesFlock  = ".scopes"  // in locksDir: serialises lock-file changes
	recordExt    = ".yaml"
	tmpSuffix    = ".tmp"
)

// DefaultDir returns the file store's default directory:
// $OPENCTL_HOME/state, else ~/.openctl/state.
func DefaultDir() (string, error) {
	if h := os.Getenv(EnvHome); h != "" {
		return filepath.Join(h, "state"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errcode.Wrap(errcode.Invalid, "state: no home directory for the state (set "+EnvHome+")", err)
	}
	return filepath.Join(home, ".openctl", "state"), nil
}

// OpenFile opens the file store in dir ("" means DefaultDir), creating the
// directory with mode 0700 if needed. An existing directory that group or
// others can write is refused (errcode.Invalid); one they can read is used
// with a warning. OpenFile neither reads records nor asks for the
// passphrase.
func OpenFile(dir string, opts FileOptions) (*FileStore, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "state: state directory "+dir, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "state: creating the state directory "+abs, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "state: state directory "+abs, err)
	}
	if !st.IsDir() {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: %s is not a directory", abs))
	}
	switch perm := st.Mode().Perm(); {
	case perm&0o022 != 0:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: state directory %s has mode %04o: group/others can write it, refusing to use it (chmod 700 %s)", abs, perm, abs))
	case perm&0o044 != 0:
		log.Warn("state: the state directory is readable by group/others; chmod 700 it", "dir", abs, "mode", fmt.Sprintf("%04o", perm))
	}
	if err := os.MkdirAll(filepath.Join(abs, locksDir), 0o700); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "state: creating the lock directory", err)
	}
	s := &FileStore{dir: abs, log: log}
	s.keys = seal.NewUnlocker(seal.WarnWeak(opts.Passphrase, log))
	return s, nil
}

// Dir returns the store's directory (absolute).
func (s *FileStore) Dir() string { return s.dir }

// recordPath returns the file of the record id, which must be valid.
func (s *FileStore) recordPath(id manifest.ID) (string, error) {
	if err := id.Validate(); err != nil {
		return "", fmt.Errorf("state: %w", err)
	}
	return filepath.Join(s.dir, GroupKey(id.Group()), id.Kind, id.Name+recordExt), nil
}

// tmpPath returns the temporary file a record file is written to before
// it is renamed into place. Writers hold the records flock, so one name
// per record suffices; a leftover from a crashed writer is overwritten by
// the next write and never read: its name starts with a dot.
func tmpPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+tmpSuffix)
}

// readRecord reads and parses the record file path, which should hold id.
// A missing file is (nil, nil). A file holding a record with the same
// provider, kind and name but another apiVersion is reported as other.
func readRecord(path string, id manifest.ID) (f *fileRecord, other *fileRecord, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, "state: reading record file "+path, err)
	}
	f, err = decodeRecord(path, data)
	if err != nil {
		return nil, nil, err
	}
	got := manifest.ID{APIVersion: f.APIVersion, Kind: f.Kind, Name: f.Name}
	switch {
	case got == id:
		return f, nil, nil
	case got.Group() == id.Group() && got.Kind == id.Kind && got.Name == id.Name:
		return nil, f, nil
	}
	return nil, nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: record file %s holds %s, not %s: was it moved?", path, got, id))
}

// Get returns the record for id, its secrets opened.
func (s *FileStore) Get(ctx context.Context, id manifest.ID) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := s.recordPath(id)
	if err != nil {
		return nil, err
	}
	f, _, err := readRecord(path, id)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, NotFoundError(id)
	}
	return s.open(f, path)
}

// open returns the record f (read from path) with its secrets opened.
func (s *FileStore) open(f *fileRecord, path string) (*Record, error) {
	r := f.record()
	if f.Secrets == nil {
		return r, nil
	}
	ring, err := s.readingKey(r.ID())
	if err != nil {
		return nil, err
	}
	sec, err := ring.Open(r.ID(), f.Secrets)
	if err != nil {
		return nil, fmt.Errorf("state: record file %s: %w", path, err)
	}
	r.Secrets = sec
	return r, nil
}

// Put writes rec if rec.Generation matches the stored generation (see
// Store). The read, the comparison and the write happen under the records
// flock, so Put is a compare-and-swap across processes too.
func (s *FileStore) Put(ctx context.Context, rec *Record) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, errcode.New(errcode.Invalid, "state: Put of a nil record")
	}
	id := rec.ID()
	path, err := s.recordPath(id)
	if err != nil {
		return nil, err
	}
	c := rec.Clone()
	if c.Spec, err = manifest.NormalizeMap(c.Spec); err != nil {
		return nil, fmt.Errorf("state: %s spec: %w", id.Short(), err)
	}
	if c.Status, err = manifest.NormalizeMap(c.Status); err != nil {
		return nil, fmt.Errorf("state: %s status: %w", id.Short(), err)
	}
	release, err := s.lockRecords(ctx)
	if err != nil {
		return nil, err
	}
	defer release()

	old, other, err := readRecord(path, id)
	if err != nil {
		return nil, err
	}
	if other != nil {
		return nil, errcode.New(errcode.Conflict, fmt.Sprintf("state: %s is stored as %s/%s/%s (file %s); one resource cannot be kept at two apiVersions", id, other.APIVersion, other.Kind, other.Name, path))
	}
	var prev *version
	if old != nil {
		prev = &version{old.Generation, old.CreatedAt, old.Lineage}
	}
	if err := c.advance(prev); err != nil {
		return nil, err
	}
	var sealed *seal.Sealed
	if len(c.Secrets) > 0 {
		ring, err := s.sealingKey()
		if err != nil {
			return nil, err
		}
		if sealed, err = ring.Seal(id, c.Secrets); err != nil {
			return nil, fmt.Errorf("state: sealing the secrets of %s: %w", id.Short(), err)
		}
	}
	if err := s.writeRecord(path, toFile(c, sealed)); err != nil {
		return nil, err
	}
	return c.Clone(), nil
}

// writeRecord writes f to path atomically: the parent directories are
// created 0700, the contents go to a temporary file (0600) in the same
// directory, which is fsynced and renamed over path, then the directory is
// fsynced. The records flock must be held.
func (s *FileStore) writeRecord(path string, f *fileRecord) error {
	data, err := encodeRecord(f)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := s.mkdirs(dir); err != nil {
		return err
	}
	if err := writeAtomic(path, tmpPath(path), data); err != nil {
		return errcode.Wrap(errcode.Internal, "state: writing record file "+path, err)
	}
	return nil
}

// mkdirs creates dir and its parents inside the store with mode 0700,
// fsyncing each parent that gained an entry.
func (s *FileStore) mkdirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != s.dir {
		if err := s.mkdirs(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return errcode.Wrap(errcode.Internal, "state: creating directory "+dir, err)
	}
	if err := syncDir(parent); err != nil {
		return errcode.Wrap(errcode.Internal, "state: creating directory "+dir, err)
	}
	return nil
}

// writeAtomic writes data to path through tmp (same directory): create or
// truncate tmp with mode 0600, write, fsync, close, rename over path, fsync
// the directory.
func writeAtomic(path, tmp string, data []byte) error {
	if err := writeTemp(tmp, data); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Delete removes the record file for id, if any. A corrupt file is removed
// too (it is not read).
func (s *FileStore) Delete(ctx context.Context, id manifest.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := s.recordPath(id)
	if err != nil {
		return err
	}
	release, err := s.lockRecords(ctx)
	if err != nil {
		return err
	}
	defer release()
	_, other, err := readRecord(path, id)
	if err == nil && other != nil {
		return nil // the file holds another apiVersion: id itself is absent
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return errcode.Wrap(errcode.Internal, "state: deleting record file "+path, err)
	}
	_ = os.Remove(tmpPath(path)) // a crashed writer's leftover, if any
	if err := syncDir(filepath.Dir(path)); err != nil {
		return errcode.Wrap(errcode.Internal, "state: deleting record file "+path, err)
	}
	return nil
}

// List returns the matching records sorted by ID, secrets opened. It reads
// only the provider and kind directories the filter allows, several files
// at a time. A file that cannot be read or parsed is an error naming it.
func (s *FileStore) List(ctx context.Context, f Filter) ([]*Record, error) {
	files, err := s.recordFiles(ctx, f)
	if err != nil {
		return nil, err
	}
	recs, err := eachFile(ctx, files, func(rf recordFile) (*Record, error) {
		fr, err := rf.read()
		if err != nil || fr == nil {
			return nil, err
		}
		if !f.Match(fr.record()) {
			return nil, nil
		}
		return s.open(fr, rf.path)
	})
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(recs, func(r *Record) bool { return r == nil })
	slices.SortFunc(out, func(a, b *Record) int { return a.ID().Compare(b.ID()) })
	return out, nil
}

// recordFile is a file that should hold the record of a provider, kind and
// name.
type recordFile struct {
	path, provider, kind, name string
}

// read reads and parses the record file, checking that it holds the
// record its path names. A file deleted since it was listed (by another
// process) is (nil, nil): gone, not an error.
func (rf recordFile) read() (*fileRecord, error) {
	data, err := os.ReadFile(rf.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: reading record file "+rf.path, err)
	}
	fr, err := decodeRecord(rf.path, data)
	if err != nil {
		return nil, err
	}
	got := manifest.ID{APIVersion: fr.APIVersion, Kind: fr.Kind, Name: fr.Name}
	if GroupKey(got.Group()) != rf.provider || got.Kind != rf.kind || got.Name != rf.name {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: record file %s holds %s, which belongs elsewhere: was it moved?", rf.path, got))
	}
	return fr, nil
}

// recordFiles lists the record files in the provider and kind directories
// the filter allows. Entries that are not record files (hidden or
// temporary files, other extensions, the lock directory's files) are
// skipped.
func (s *FileStore) recordFiles(ctx context.Context, f Filter) ([]recordFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	groupKey := ""
	if f.Group != "" {
		groupKey = GroupKey(f.Group)
	}
	providers, err := subdirs(s.dir, groupKey)
	if err != nil {
		return nil, err
	}
	var out []recordFile
	for _, p := range providers {
		kinds, err := subdirs(filepath.Join(s.dir, p), f.Kind)
		if err != nil {
			return nil, err
		}
		for _, k := range kinds {
			dir := filepath.Join(s.dir, p, k)
			ents, err := os.ReadDir(dir)
			if err != nil {
				return nil, errcode.Wrap(errcode.Internal, "state: reading directory "+dir, err)
			}
			for _, e := range ents {
				name, ok := strings.CutSuffix(e.Name(), recordExt)
				if !ok || strings.HasPrefix(name, ".") || e.IsDir() {
					continue
				}
				out = append(out, recordFile{path: filepath.Join(dir, e.Name()), provider: p, kind: k, name: name})
			}
		}
	}
	return out, nil
}

// eachFile calls fn for every file, on up to GOMAXPROCS goroutines, and
// returns the results in the files' order, or the error of the first file
// (in that order) that failed.
func eachFile[T any](ctx context.Context, files []recordFile, fn func(recordFile) (T, error)) ([]T, error) {
	out := make([]T, len(files))
	errs := make([]error, len(files))
	workers := min(runtime.GOMAXPROCS(0), (len(files)+15)/16)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				out[i], errs[i] = fn(files[i])
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// subdirs lists the subdirectories of dir, or only want if it is set. A
// missing directory has none.
func subdirs(dir, want string) ([]string, error) {
	if want != "" {
		st, err := os.Stat(filepath.Join(dir, want))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		case err != nil:
			return nil, errcode.Wrap(errcode.Internal, "state: reading directory "+dir, err)
		case !st.IsDir():
			return nil, nil
		}
		return []string{want}, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: reading directory "+dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// lockRecords takes the lock serialising record writes: this process's
// mutex, then the records flock. The returned function releases both.
func (s *FileStore) lockRecords(ctx context.Context) (func(), error) {
	s.writeMu.Lock()
	release, err := flockFile(ctx, filepath.Join(s.dir, locksDir, recordsFlock))
	if err != nil {
		s.writeMu.Unlock()
		return nil, err
	}
	return func() {
		release()
		s.writeMu.Unlock()
	}, nil
}

// loadKey returns the store's key file, rereading it only when the file
// changed since the last read. A missing key file matches
// errcode.NotFound.
func (s *FileStore) loadKey() (*seal.KeyFile, error) {
	path := filepath.Join(s.dir, keyFileName)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errcode.Wrap(errcode.NotFound, "state: the store has no key file "+path+" yet", err)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "state: key file "+path, err)
	}
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.keyFile != nil && os.SameFile(s.keyStat, st) && s.keyStat.ModTime().Equal(st.ModTime()) && s.keyStat.Size() == st.Size() {
		return s.keyFile, nil
	}
	kf, err := seal.LoadKeyFile(path, s.log)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	s.keyFile, s.keyStat = kf, st
	return kf, nil
}

// readingKey returns the unlocked data key to open the secrets of id.
func (s *FileStore) readingKey(id manifest.ID) (*seal.Keyring, error) {
	kf, err := s.loadKey()
	if errcode.Is(err, errcode.NotFound) {
		// Not wrapped: the record exists, so NotFound must not stay in the
		// chain (the engine would take the record for absent).
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("state: %s has sealed secrets but the store has no key file (%v)", id.Short(), err))
	}
	if err != nil {
		return nil, err
	}
	ring, err := s.keys.Unlock(kf)
	if err != nil {
		return nil, fmt.Errorf("state: unlocking the state key %s: %w", filepath.Join(s.dir, keyFileName), err)
	}
	return ring, nil
}

// Unlock makes sure the store can seal and open secrets (see Unlocker):
// it unlocks the data key, creating and saving it if the store has none.
func (s *FileStore) Unlock(ctx context.Context) error {
	release, err := s.lockRecords(ctx)
	if err != nil {
		return err
	}
	defer release()
	_, err = s.sealingKey()
	return err
}

// sealingKey returns the unlocked data key to seal secrets with, creating
// and saving the key file if the store has none. The records flock must
// be held, so that two processes never create two keys.
func (s *FileStore) sealingKey() (*seal.Keyring, error) {
	path := filepath.Join(s.dir, keyFileName)
	kf, err := s.loadKey()
	if errcode.Is(err, errcode.NotFound) {
		kf, ring, err := s.keys.Create()
		if err != nil {
			return nil, fmt.Errorf("state: creating the state key %s: %w", path, err)
		}
		if err := kf.Save(path); err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
		return ring, nil
	}
	if err != nil {
		return nil, err
	}
	ring, err := s.keys.Unlock(kf)
	if err != nil {
		return nil, fmt.Errorf("state: unlocking the state key %s: %w", path, err)
	}
	return ring, nil
}
