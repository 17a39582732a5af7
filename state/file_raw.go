package state

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state/seal"
)

// Key returns the store's key file (<dir>/key.yaml), or an error matching
// errcode.NotFound if no record with secrets was ever written.
func (s *FileStore) Key(ctx context.Context) (*seal.KeyFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kf, err := s.loadKey()
	if err != nil {
		return nil, err
	}
	c := *kf
	return &c, nil
}

// ExportRaw returns every record sorted by ID with its secrets sealed as
// stored. It needs no passphrase.
func (s *FileStore) ExportRaw(ctx context.Context) ([]RawRecord, error) {
	files, err := s.recordFiles(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	out, err := eachFile(ctx, files, func(rf recordFile) (RawRecord, error) {
		fr, err := rf.read()
		if err != nil || fr == nil {
			return RawRecord{}, err
		}
		return RawRecord{Record: fr.record(), Sealed: fr.Secrets}, nil
	})
	if err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(r RawRecord) bool { return r.Record == nil }) // deleted meanwhile
	slices.SortFunc(out, func(a, b RawRecord) int { return a.Record.ID().Compare(b.Record.ID()) })
	return out, nil
}

// ImportRaw saves key as the store's key file if the store has none (see
// RawStore) and writes the records verbatim, each atomically, under the
// records flock. It needs no passphrase: sealed secrets are copied as they
// are. The import as a whole is not atomic: after a failure some records
// may be written; importing again is safe.
func (s *FileStore) ImportRaw(ctx context.Context, key *seal.KeyFile, recs []RawRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	paths := make([]string, len(recs))
	for i, rr := range recs {
		if err := checkRaw(rr); err != nil {
			return err
		}
		if rr.Sealed != nil && key == nil {
			return errcode.New(errcode.Invalid, fmt.Sprintf("state: import: %s has sealed secrets but no key was given", rr.Record.ID().Short()))
		}
		p, err := s.recordPath(rr.Record.ID())
		if err != nil {
			return err
		}
		paths[i] = p
	}
	if key != nil {
		if err := key.Validate(); err != nil {
			return fmt.Errorf("state: import: %w", err)
		}
	}
	release, err := s.lockRecords(ctx)
	if err != nil {
		return err
	}
	defer release()
	if key != nil {
		if err := s.adoptKey(ctx, key); err != nil {
			return err
		}
	}
	for i, rr := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		id := rr.Record.ID()
		if _, other, err := readRecord(paths[i], id); err != nil {
			return err
		} else if other != nil {
			return errcode.New(errcode.Conflict, fmt.Sprintf("state: import: %s is stored as %s/%s/%s (file %s); one resource cannot be kept at two apiVersions", id, other.APIVersion, other.Kind, other.Name, paths[i]))
		}
		if err := s.writeRecord(paths[i], toFile(rr.Record, rr.Sealed)); err != nil {
			return err
		}
	}
	return nil
}

// adoptKey makes key the store's key file unless it already is. A
// different key is replaced only while the store holds no record. The
// records flock must be held.
func (s *FileStore) adoptKey(ctx context.Context, key *seal.KeyFile) error {
	cur, err := s.loadKey()
	switch {
	case err == nil && cur.SameKey(key):
		return nil
	case err == nil:
		files, err := s.recordFiles(ctx, Filter{})
		if err != nil {
			return err
		}
		if len(files) > 0 {
			return errcode.New(errcode.Conflict, fmt.Sprintf("state: import: the store in %s holds records sealed with another key", s.dir))
		}
	case !errcode.Is(err, errcode.NotFound):
		return err
	}
	if err := key.Save(filepath.Join(s.dir, keyFileName)); err != nil {
		return fmt.Errorf("state: import: %w", err)
	}
	return nil
}
