package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openctl/openctl/errcode"
)

// IdentityAdopter is implemented by [Identified] stores that can take
// another store's identity. [Copy] uses it so that a store state was
// copied into manages the resources the source created (providers mark
// them with the identity of the store that created them).
type IdentityAdopter interface {
	Identified
	// AdoptStoreID makes id the store's identity. A store that holds
	// records and already has another identity refuses with an error
	// matching errcode.Conflict and keeps its own: the resources its
	// records describe are marked with it.
	AdoptStoreID(ctx context.Context, id string) error
}

// ValidStoreID reports whether id can be a store's identity: 1 to 128
// letters, digits, '.', '_' and '-', not starting with '.'. NewID's
// identifiers are.
func ValidStoreID(id string) bool { return validScope(id) }

// idConflict is AdoptStoreID's refusal.
func idConflict(where, cur, id string, n int) error {
	return errcode.New(errcode.Conflict, fmt.Sprintf("state: %s has its own identity %s and holds %d records, whose resources are marked with it; it cannot take identity %s (copy into an empty store instead)", where, cur, n, id))
}

// storeIDFile is the file beside the key file holding a FileStore's
// identity.
const storeIDFile = "store-id"

// StoreID returns the store's identity, kept in the file store-id of its
// directory (0600), created on first use. Processes that open a new store
// at once agree on one identity: the file is written under a temporary
// name and hard-linked into place, which fails for all but the first.
func (s *FileStore) StoreID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	path := filepath.Join(s.dir, storeIDFile)
	id, err := readStoreID(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	tmp, err := os.CreateTemp(s.dir, "."+storeIDFile+"-*"+tmpSuffix)
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, "state: creating the store identity "+path, err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName)
	if err := writeTemp(tmpName, []byte(NewID()+"\n")); err != nil {
		return "", errcode.Wrap(errcode.Internal, "state: creating the store identity "+path, err)
	}
	switch err := os.Link(tmpName, path); {
	case err == nil:
		if err := syncDir(s.dir); err != nil {
			return "", errcode.Wrap(errcode.Internal, "state: creating the store identity "+path, err)
		}
	case !errors.Is(err, fs.ErrExist): // another process made it first: use theirs
		return "", errcode.Wrap(errcode.Internal, "state: creating the store identity "+path, err)
	}
	return readStoreID(path)
}

// readStoreID reads an identity file. A missing file matches
// fs.ErrNotExist; a damaged one is an errcode.Invalid error.
func readStoreID(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, "state: reading the store identity "+path, err)
	}
	id, ok := strings.CutSuffix(string(data), "\n")
	if !ok || !ValidStoreID(id) {
		return "", errcode.New(errcode.Invalid, fmt.Sprintf("state: the store identity file %s is damaged (want one line of letters and digits); restore it from a backup — deleting it makes a new identity, and the resources marked with the old one are no longer recognised", path))
	}
	return id, nil
}

// AdoptStoreID makes id the store's identity (see [IdentityAdopter]),
// replacing the store-id file atomically under the records flock.
// Processes that read the old identity before keep it until they read it
// again.
func (s *FileStore) AdoptStoreID(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !ValidStoreID(id) {
		return errcode.New(errcode.Invalid, fmt.Sprintf("state: %q is not a store identity", id))
	}
	path := filepath.Join(s.dir, storeIDFile)
	release, err := s.lockRecords(ctx)
	if err != nil {
		return err
	}
	defer release()
	cur, err := readStoreID(path)
	switch {
	case err == nil && cur == id:
		return nil
	case err == nil:
		files, err := s.recordFiles(ctx, Filter{})
		if err != nil {
			return err
		}
		if len(files) > 0 {
			return idConflict("the file store "+s.dir, cur, id, len(files))
		}
	case !errors.Is(err, fs.ErrNotExist) && !errcode.Is(err, errcode.Invalid):
		return err
	}
	if err := writeAtomic(path, tmpPath(path), []byte(id+"\n")); err != nil {
		return errcode.Wrap(errcode.Internal, "state: writing the store identity "+path, err)
	}
	if cur != "" {
		s.log.Warn("state: the store takes another store's identity", "dir", s.dir, "was", cur, "now", id)
	}
	return nil
}

// StoreID returns the store's identity, made by NewMemory.
func (m *Memory) StoreID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id, nil
}

// AdoptStoreID makes id the store's identity (see [IdentityAdopter]).
func (m *Memory) AdoptStoreID(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !ValidStoreID(id) {
		return errcode.New(errcode.Invalid, fmt.Sprintf("state: %q is not a store identity", id))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.id != id && len(m.records) > 0 {
		return idConflict("the memory store", m.id, id, len(m.records))
	}
	m.id = id
	return nil
}
