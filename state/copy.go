package state

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state/seal"
)

// Copy copies every record of from into to, verbatim: generations,
// lineages, timestamps and sealed secrets (with the key file that seals
// them) are preserved and no secret is decrypted, so no passphrase is
// needed and the target reads the secrets with the source's passphrase. It
// is how state moves from the file store to PostgreSQL (openctl state
// migrate).
//
// Copy holds both stores' DefaultScope locks while it works (a held lock is
// a *LockedError). It refuses, changing nothing, with an error matching
// errcode.Conflict when the target already holds a record with the same ID
// but another lineage (a different resource that happens to share the
// name), or the same lineage at a higher generation (the target moved on
// since an earlier copy), or is sealed with another key and holds records.
// Records of the target that the source lacks are kept. Copying again after
// a partial failure is safe. Copy returns the number of records copied.
//
// The target takes the source's identity ([Identified]): providers mark
// the resources they create with the identity of the store that recorded
// them, and the target must go on managing them. The target must support
// it ([IdentityAdopter]) unless the source holds no records, and a target
// that holds records under an identity of its own is refused (its
// resources are marked with that one), changing nothing. Copying into an
// empty store — what openctl state migrate is for — always works.
func Copy(ctx context.Context, from, to RawStore) (n int, err error) {
	unlockFrom, err := from.Lock(ctx, DefaultScope, NewLockInfo("copy"))
	if err != nil {
		return 0, fmt.Errorf("state: copy: locking the source: %w", err)
	}
	defer func() { err = joinUnlock(err, unlockFrom, "source") }()
	unlockTo, err := to.Lock(ctx, DefaultScope, NewLockInfo("copy"))
	if err != nil {
		return 0, fmt.Errorf("state: copy: locking the target: %w", err)
	}
	defer func() { err = joinUnlock(err, unlockTo, "target") }()

	// Export first: a store may create its key while exporting (Memory
	// seals its secrets then).
	recs, err := from.ExportRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("state: copy: reading the source: %w", err)
	}
	key, err := from.Key(ctx)
	if errors.Is(err, errcode.NotFound) {
		key = nil
	} else if err != nil {
		return 0, fmt.Errorf("state: copy: reading the source's key: %w", err)
	}
	existing, err := to.ExportRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("state: copy: reading the target: %w", err)
	}
	if err := checkCopy(key, recs, existing); err != nil {
		return 0, err
	}
	// Before the records: a target that failed to import them keeps the
	// source's identity, and copying again completes it.
	if err := copyIdentity(ctx, from, to, len(recs)); err != nil {
		return 0, err
	}
	if err := to.ImportRaw(ctx, key, recs); err != nil {
		return 0, fmt.Errorf("state: copy: writing the target: %w", err)
	}
	return len(recs), nil
}

// copyIdentity gives the target the source's identity; n is the number of
// records to copy.
func copyIdentity(ctx context.Context, from, to RawStore, n int) error {
	src, ok := from.(Identified)
	if !ok {
		return nil // nothing the source recorded is marked with an identity
	}
	id, err := src.StoreID(ctx)
	if err != nil {
		return fmt.Errorf("state: copy: reading the source's identity: %w", err)
	}
	dst, ok := to.(IdentityAdopter)
	if !ok {
		if n == 0 {
			return nil
		}
		return errcode.New(errcode.Invalid, fmt.Sprintf("state: copy: the target (%T) cannot take the source's identity, so it could not manage the resources the source created; nothing copied", to))
	}
	if err := dst.AdoptStoreID(ctx, id); err != nil {
		return fmt.Errorf("state: copy: giving the target the source's identity: %w", err)
	}
	return nil
}

// checkCopy reports records of the source that would overwrite a different
// or newer record in the target.
func checkCopy(key *seal.KeyFile, recs, existing []RawRecord) error {
	have := make(map[manifest.ID]*Record, len(existing))
	for _, e := range existing {
		have[e.Record.ID()] = e.Record
	}
	var problems []string
	for _, r := range recs {
		if r.Sealed != nil && key == nil {
			return errcode.New(errcode.Invalid, fmt.Sprintf("state: copy: %s has sealed secrets but the source has no key file", r.Record.ID().Short()))
		}
		e, ok := have[r.Record.ID()]
		switch {
		case !ok:
		case e.Lineage != r.Record.Lineage:
			problems = append(problems, fmt.Sprintf("%s is another resource in the target (lineage %s, source %s)", r.Record.ID(), e.Lineage, r.Record.Lineage))
		case e.Generation > r.Record.Generation:
			problems = append(problems, fmt.Sprintf("%s is newer in the target (generation %d, source %d)", r.Record.ID(), e.Generation, r.Record.Generation))
		}
	}
	if len(problems) > 0 {
		return errcode.New(errcode.Conflict, "state: copy: the target already holds conflicting records, nothing copied: "+strings.Join(problems, "; "))
	}
	return nil
}

// joinUnlock releases a lock taken by Copy and adds a failure to err.
func joinUnlock(err error, unlock func() error, which string) error {
	if uerr := unlock(); uerr != nil {
		return errors.Join(err, fmt.Errorf("state: copy: unlocking the %s: %w", which, uerr))
	}
	return err
}
