package openctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// Adopt takes resources that another openctl state (from) owns into this
// engine's: for each id, the provider marks the live resource as this
// state's (registry.Adopter), this state records it (its spec as the
// other state recorded it, else as read live, to be reconciled with the
// manifest by the next apply) and the other state forgets it. It is the
// way out when two states hold what one manifest describes — two CI
// runners with different stores applied it at once, and each re-run fails
// on the other's VMs (ALREADY_EXISTS naming the other state).
//
// Both states' locks are held throughout; the other state's is taken
// without waiting, so an adoption is refused (CONFLICT, naming the
// holder) while an apply of that state runs. Each resource is adopted or
// fails on its own; the errors are joined. Nothing is adopted from this
// state itself, nor from a store without an identity.
func (e *Engine) Adopt(ctx context.Context, from state.Store, ids ...manifest.ID) ([]*manifest.Resource, error) {
	other, ok := from.(state.Identified)
	if !ok {
		return nil, errcode.New(errcode.Invalid, "openctl: adopt: the other state store has no identity: nothing it created carries its mark")
	}
	fromID, err := other.StoreID(ctx)
	if err != nil {
		return nil, &StateError{Op: "identify", Err: err}
	}
	ctx, err = e.identify(ctx)
	if err != nil {
		return nil, err
	}
	owner := registry.CallOf(ctx).Owner
	switch {
	case owner == "":
		return nil, errcode.New(errcode.Invalid, "openctl: adopt: this state store has no identity to mark resources with")
	case fromID == owner:
		return nil, errcode.New(errcode.Invalid, "openctl: adopt: the other state is this state (identity "+owner+")")
	}
	unlockFrom, err := state.LockWait(ctx, from, state.DefaultScope, state.NewLockInfo("adopt into "+owner), 0, nil)
	if err != nil {
		return nil, fmt.Errorf("openctl: adopt: the other state (%s) is in use — wait for its apply to end: %w", fromID, err)
	}
	defer func() {
		if err := unlockFrom(); err != nil {
			e.log.Error("cannot release the other state's lock", "err", err.Error())
		}
	}()
	unlock, err := e.lock(ctx, "adopt")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := unlock(); err != nil {
			e.log.Error("cannot release state lock", "err", err.Error())
		}
	}()
	var out []*manifest.Resource
	var errs []error
	for _, id := range ids {
		r, err := e.adoptOne(ctx, from, fromID, e.reg.Canonical(id))
		if err != nil {
			errs = append(errs, wrapf(err, "adopt %s", id.Short()))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// adoptOne moves one resource from the other state into this one.
func (e *Engine) adoptOne(ctx context.Context, from state.Store, fromID string, id manifest.ID) (*manifest.Resource, error) {
	p, kind, err := e.reg.Lookup(id)
	if err != nil {
		return nil, err
	}
	a, ok := p.(registry.Adopter)
	if !ok || kind.Composite || kind.ReadOnly {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: %s cannot be adopted: its provider (%s) does not mark what it creates with its state", id.Short(), p.Name()))
	}
	prev, err := from.Get(ctx, id)
	switch {
	case errcode.Is(err, errcode.NotFound):
		prev = nil
	case err != nil:
		return nil, &StateError{Op: "read", ID: id, Err: err}
	}
	mine, err := e.store.Get(ctx, id) // a record of a failed apply of it, replaced
	switch {
	case errcode.Is(err, errcode.NotFound):
		mine = nil
	case err != nil:
		return nil, &StateError{Op: "read", ID: id, Err: err}
	}
	var live *manifest.Resource
	_, err = e.retry(ctx, id, "adopt", func(ctx context.Context) error {
		return e.safe("adopt", id, func() (err error) { live, err = a.Adopt(ctx, id, fromID); return err })
	})
	if err != nil {
		return nil, err
	}
	spec := live.Spec
	labels := live.Metadata.Labels
	if prev != nil {
		spec, labels = prev.Spec, prev.Labels // as written: secret fields stay sealed there
	}
	status, secrets := splitSecrets(kind.SecretFields, "status.", live.Status)
	rec := &state.Record{APIVersion: id.APIVersion, Kind: id.Kind, Name: id.Name, Labels: labels, Spec: spec, Status: status, Secrets: secrets}
	if mine != nil {
		rec.Generation, rec.Lineage, rec.CreatedAt = mine.Generation, mine.Lineage, mine.CreatedAt
	}
	wctx, cancel := afterWrite(ctx)
	defer cancel()
	if _, err := e.store.Put(wctx, rec); err != nil {
		return nil, &StateError{Op: "record", ID: id, Err: err}
	}
	if prev != nil {
		if err := from.Delete(wctx, id); err != nil && !errcode.Is(err, errcode.NotFound) {
			return nil, fmt.Errorf("openctl: %s is this state's now, but the other state could not forget it (run openctl state rm %s there): %w", id.Short(), id.Short(), err)
		}
	}
	return live, nil
}
