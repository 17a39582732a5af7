package openctl

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// Do runs a provider action (start, stop, logs, ...) on a resource. args
// are checked against the action's spec (see registry.ActionSpec.CheckArgs);
// streamed output goes to out (nil discards it). A kind that reads its
// prior state gets it (registry.Call.Prior), as for Get. The steps the action
// reports (registry.Call.ReportStep) reach the observer as EventStep events
// whose Op is the action's name.
//
// An action whose spec says Records (a credential rotation) runs under
// the state lock, like Apply, and records what it changes through
// registry.ActionRequest.Record as it goes.
func (e *Engine) Do(ctx context.Context, id manifest.ID, action string, args map[string]any, out io.Writer) (*registry.ActionResult, error) {
	id = e.reg.Canonical(id)
	p, _, err := e.reg.Lookup(id)
	if err != nil {
		return nil, err
	}
	a, spec, err := registry.FindAction(p, id.Kind, action)
	if err != nil {
		return nil, err
	}
	checked, err := spec.CheckArgs(args)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = io.Discard
	}
	req := registry.ActionRequest{Action: action, ID: id, Args: checked, Out: out}
	if spec.Records {
		unlock, err := e.lock(ctx, action)
		if err != nil {
			return nil, err
		}
		defer func() {
			if uerr := unlock(); uerr != nil {
				e.log.Error("cannot release state lock", "err", uerr.Error())
			}
		}()
		req.Record = func(ctx context.Context, updates ...registry.StatusUpdate) error {
			return e.recordStatus(ctx, updates)
		}
	}
	if ctx, err = e.withPrior(ctx, id); err != nil {
		return nil, err
	}
	ctx = withCall(ctx, func(c *registry.Call) {
		c.Step = func(step string) { e.emit(Event{Type: EventStep, ID: id, Op: action, Step: step}) }
	})
	var res *registry.ActionResult
	err = e.safeTop(action, id, func() (err error) {
		res, err = a.Do(ctx, req)
		return err
	})
	return res, err
}

// recordStatus records status (and spec) changes an action made. A
// record whose spec hash matched its spec as resolved from the state
// before the change — one of the changed records, or one whose $refs
// point at them — gets the hash of its spec as resolved after it: a $ref
// to a field the action changed (a rotated credential another resource
// takes from this one) is then not mistaken for a change of the manifest
// by the next plan, and a spec the action changed (an upgrade's version)
// matches a manifest that says the same. A
// record whose hash did not match (its last apply failed, or what it
// refers to changed since) keeps it, so the next apply still applies it.
func (e *Engine) recordStatus(ctx context.Context, updates []registry.StatusUpdate) error {
	all, err := e.store.List(ctx, state.Filter{})
	if err != nil {
		return &StateError{Op: "list", Err: err}
	}
	byID := make(map[manifest.ID]*state.Record, len(all))
	for _, rec := range all {
		byID[rec.ID()] = rec
	}
	changed := make(map[manifest.ID]bool, len(updates))
	for _, u := range updates {
		if _, _, err := e.reg.Lookup(u.ID); err != nil {
			return err
		}
		if byID[u.ID] == nil {
			return &StateError{Op: "read", ID: u.ID, Err: errcode.New(errcode.NotFound, u.ID.Short()+" is not recorded")}
		}
		changed[u.ID] = true
	}
	// The records to rehash: the changed ones and their dependents, each
	// only if its hash is consistent with the state as it is now.
	var rehash []manifest.ID
	for _, rec := range all {
		id := rec.ID()
		touched := changed[id]
		if !touched {
			deps, _ := refs.Dependencies(rec.Resource())
			touched = slices.ContainsFunc(deps, func(d manifest.ID) bool { return changed[d] })
		}
		if touched && rec.SpecHash != "" && e.stateHash(ctx, rec) == rec.SpecHash {
			rehash = append(rehash, id)
		}
	}
	wctx, cancel := afterWrite(ctx)
	defer cancel()
	for _, u := range updates {
		rec := byID[u.ID]
		_, kind, _ := e.reg.Lookup(u.ID)
		status := rec.Revealed().Status
		if status == nil {
			status = map[string]any{}
		}
		for k, v := range u.Status {
			status[k] = v
		}
		plain, sealed := splitSecrets(kind.SecretFields, "status.", status)
		next := rec.Clone()
		next.Status = plain
		if len(u.Spec) > 0 {
			obj := map[string]any{"spec": manifest.CopyMap(next.Spec)}
			for _, path := range slices.Sorted(maps.Keys(u.Spec)) {
				if !strings.HasPrefix(path, "spec.") {
					return errcode.New(errcode.Internal, "openctl: "+u.ID.Short()+": an action's spec update names "+path+", not a spec field")
				}
				if err := manifest.SetField(obj, path, u.Spec[path]); err != nil {
					return err
				}
			}
			next.Spec, _ = obj["spec"].(map[string]any)
		}
		for p := range next.Secrets {
			if strings.HasPrefix(p, "status.") {
				delete(next.Secrets, p)
			}
		}
		if len(sealed) > 0 && next.Secrets == nil {
			next.Secrets = map[string]secret.Secret{}
		}
		for p, v := range sealed {
			next.Secrets[p] = v
		}
		stored, err := e.store.Put(wctx, next)
		if err != nil {
			return &StateError{Op: "record", ID: u.ID, Err: err}
		}
		byID[u.ID] = stored // its new generation, for the rehash below
	}
	// Every status is written: the hashes resolve against the new ones.
	for _, id := range rehash {
		rec := byID[id]
		hash := e.stateHash(wctx, rec)
		if hash == "" || hash == rec.SpecHash {
			continue
		}
		next := rec.Clone()
		next.SpecHash = hash
		if _, err := e.store.Put(wctx, next); err != nil {
			return &StateError{Op: "record", ID: id, Err: err}
		}
	}
	return nil
}

// stateHash is the spec hash of a record's spec with its $refs resolved
// against the state's records instead of the live resources: what Apply
// would hash if every resource were as last recorded. It is "" when a
// $ref does not resolve there (its target is not recorded, or lacks the
// field): such a record cannot be kept consistent.
func (e *Engine) stateHash(ctx context.Context, rec *state.Record) string {
	resolved, err := refs.Resolve(ctx, stateGetter{e}, rec.Revealed())
	if err != nil {
		e.log.Debug("spec not resolvable from the state", "resource", rec.ID().String(), "err", err.Error())
		return ""
	}
	return manifest.Hash(resolved.Spec)
}

// stateGetter resolves $refs against the state's records.
type stateGetter struct{ e *Engine }

func (g stateGetter) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	rec, err := g.e.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return rec.Revealed(), nil
}
