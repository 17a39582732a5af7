package openctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// Delete deletes resources and forgets them in state.
//
// A composite's children are deleted with it, before it. Deleting a child
// directly while its owner still exists is refused (an Invalid error
// naming the owner) unless the owner is deleted in the same call. Deletes
// run in reverse dependency order — a resource is deleted before the
// resources its $refs point at — independent ones in parallel. A resource
// that is already gone is not an error: its result is OutcomeUnchanged (and
// its record, if any, is forgotten).
func (e *Engine) Delete(ctx context.Context, ids ...manifest.ID) (*Report, error) {
	var errs []error
	ids = slices.Clone(ids)
	for i := range ids {
		ids[i] = e.reg.Canonical(ids[i])
	}
	for _, id := range ids {
		if err := id.Validate(); err != nil {
			errs = append(errs, wrapf(err, "delete %s", id.Short()))
		} else if _, kind, err := e.reg.Lookup(id); err != nil {
			errs = append(errs, wrapf(err, "delete %s", id.Short()))
		} else if kind.ReadOnly {
			errs = append(errs, errcode.New(errcode.Invalid, fmt.Sprintf("openctl: delete %s: kind %s is read-only", id.Short(), id.Kind)))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	unlock, err := e.lock(ctx, "delete")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if ctx, err = e.identify(ctx); err != nil {
		return nil, err
	}

	if err := e.moveAliasRecords(ctx, ids); err != nil {
		return nil, err
	}
	s := newSet()
	requested := map[manifest.ID]bool{}
	for _, id := range ids {
		requested[id] = true
	}
	for _, id := range ids {
		if err := e.addForDelete(ctx, s, id, nil, 0, requested, false); err != nil {
			return nil, err
		}
	}
	addDeleteEdges(s, slices.Sorted(maps.Keys(s.nodes)))
	if err := s.g.Validate(); err != nil {
		return nil, fmt.Errorf("openctl: cannot order the deletes: %w", err)
	}
	return e.run(ctx, s)
}

// addForDelete adds id, and the children its record (or, without one, its
// composite provider's Plan of the live resource) lists, to s.
//
// A resource asked for by name (requested) whose owner still exists and is
// not being deleted too is refused: it gets a node that fails without
// running, and nothing below it is added, so nothing of it is deleted.
func (e *Engine) addForDelete(ctx context.Context, s *set, id manifest.ID, owner *manifest.ID, depth int, requested map[manifest.ID]bool, cascade bool) error {
	if s.node(id) != nil {
		return nil
	}
	p, kind, err := e.reg.Lookup(id)
	if err != nil {
		return wrapf(err, "delete %s", id.Short())
	}
	n := &node{id: id, key: id.String(), prov: p, kind: kind, owner: owner, del: true, cascade: cascade}
	s.nodes[n.key] = n
	rec, err := e.store.Get(ctx, id)
	switch {
	case err == nil:
		n.res = rec.Resource()
		n.recorded = true
		n.children = rec.Children
		if n.owner == nil {
			n.owner = rec.Owner
		}
	case errcode.Is(err, errcode.NotFound):
		n.res = &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name}}
		if live, gerr := e.get(ctx, n, "delete"); gerr == nil {
			n.res = live
			if o, ok := live.Owner(); ok && n.owner == nil {
				n.owner = &o
			}
			if pl, ok := p.(registry.Planner); ok && kind.Composite {
				var children []*manifest.Resource
				if err := e.safe("plan", id, func() (err error) { children, err = pl.Plan(ctx, live); return err }); err != nil {
					return wrapf(err, "delete %s: plan children", id.Short())
				}
				for _, c := range children {
					if c == nil {
						return errcode.New(errcode.Internal, fmt.Sprintf("openctl: delete %s: plan returned a nil child", id.Short()))
					}
					n.children = append(n.children, c.ID())
				}
			}
		} else if !errcode.Is(gerr, errcode.NotFound) {
			return wrapf(gerr, "delete %s", id.Short())
		}
	default:
		return wrapf(err, "delete %s", id.Short())
	}
	if deps, err := refs.Dependencies(n.res); err == nil {
		n.deps = deps
	}
	if owner == nil && n.owner != nil && !requested[*n.owner] {
		if _, err := e.store.Get(ctx, *n.owner); err == nil {
			n.refused = errcode.New(errcode.Invalid, fmt.Sprintf("openctl: delete %s: it belongs to %s; delete %s instead (its children go with it)", id.Short(), n.owner.Short(), n.owner.Short()))
			n.children = nil
			return nil
		} else if !errcode.Is(err, errcode.NotFound) {
			return wrapf(err, "delete %s", id.Short())
		}
	}
	if depth >= e.maxDepth {
		return errcode.New(errcode.Invalid, fmt.Sprintf("openctl: delete %s: composites nested deeper than %d", id.Short(), e.maxDepth))
	}
	// Records owned by id go with it even when its own record does not
	// list them: an apply killed after a provider made a child (an exec
	// plugin's dispatch) and before it recorded the owner.
	owned, err := e.ownedBy(ctx, s, id)
	if err != nil {
		return wrapf(err, "delete %s", id.Short())
	}
	for _, c := range owned {
		if !slices.Contains(n.children, c) {
			n.children = append(n.children, c)
		}
	}
	for _, c := range n.children {
		if err := e.addForDelete(ctx, s, c, &n.id, depth+1, requested, true); err != nil {
			return err
		}
	}
	return nil
}

// ownedBy returns the recorded resources whose owner is id.
func (e *Engine) ownedBy(ctx context.Context, s *set, id manifest.ID) ([]manifest.ID, error) {
	if s.owned == nil {
		recs, err := e.store.List(ctx, state.Filter{})
		if err != nil {
			return nil, &StateError{Op: "list", Err: err}
		}
		s.owned = map[manifest.ID][]manifest.ID{}
		for _, r := range recs {
			if r.Owner != nil {
				s.owned[*r.Owner] = append(s.owned[*r.Owner], r.ID())
			}
		}
	}
	return s.owned[id], nil
}

func (e *Engine) deleteOne(ctx context.Context, n *node, p *progress) error {
	id := n.id
	ctx = withCall(ctx, func(c *registry.Call) {
		c.Step = func(step string) { e.emit(Event{Type: EventStep, ID: id, Op: "delete", Step: step}) }
		c.Children = newChildLog(e, id)
		c.Cascade = n.cascade
		if n.parent != nil {
			c.Parent = n.parent.DeepCopy()
		}
	})
	ctx, err := e.withPrior(ctx, id)
	if err != nil {
		return wrapf(err, "delete %s", id.Short())
	}
	// A resource that is already gone is reported as unchanged, not as
	// deleted: nothing was deleted. A recorded resource with children is
	// deleted without reading it first: its children went first, and with
	// them, for some composites (a K3s cluster), everything a Get could
	// find of it — the hosts it would read may be gone too, each read
	// waiting out a timeout.
	outcome := OutcomeDeleted
	gone := false
	if !n.recorded || len(n.children) == 0 {
		_, err := e.get(ctx, n, "delete")
		gone = errcode.Is(err, errcode.NotFound)
	}
	if gone {
		outcome = OutcomeUnchanged
		e.log.Info("already absent", "resource", id.String())
	} else {
		attempts, err := e.retry(ctx, id, "delete", func(ctx context.Context) error {
			return e.safe("delete", id, func() error { return n.prov.Delete(ctx, id) })
		})
		p.attempts = attempts
		if err != nil {
			return wrapf(err, "delete %s", id.Short())
		}
	}
	wctx, cancel := afterWrite(ctx) // it is gone: forget it even if ctx was cancelled meanwhile
	defer cancel()
	if err := e.store.Delete(wctx, id); err != nil {
		return wrapf(&StateError{Op: "forget", ID: id, Err: err}, "delete %s", id.Short())
	}
	p.outcome = outcome
	if outcome == OutcomeDeleted {
		e.log.Info("deleted", "resource", id.String())
	}
	return nil
}
