package openctl

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/graph"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// Drift reports, as a Plan, which recorded resources no longer match what
// the state recorded as applied, changing nothing and taking no lock: it
// compares the live resources with the state, not with manifests.
//
// With resources (manifests, composites expanded as Plan does), it checks
// those that the state records; without, every record in the state. For
// each it reads the live resource: one that is gone is a Change with
// ActionCreate ("recorded in state but gone"); otherwise the recorded spec
// (its sealed secret fields opened, its $refs resolved from live values)
// is compared with the live resource — by the provider's Diff when it is
// a registry.Differ, else field by field with the live spec — and a
// difference is an ActionUpdate (or the Differ's ActionReplace) with the
// changed fields (secrets redacted) and the reason "changed outside
// openctl". A resource without drift is an ActionNoOp. Plan.HasChanges
// reports drift. The Changes are sorted by ID; the plan has no waves.
//
// Drift opens sealed secrets (see "Reading" in the package documentation):
// with secrets in the state it needs the passphrase.
func (e *Engine) Drift(ctx context.Context, resources ...*manifest.Resource) (*Plan, error) {
	ctx, err := e.identify(ctx)
	if err != nil {
		return nil, err
	}
	var recs []*state.Record
	if len(resources) > 0 {
		s, err := e.build(ctx, resources)
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(s.nodes)) {
			rec, err := e.store.Get(ctx, s.nodes[k].id)
			if errcode.Is(err, errcode.NotFound) {
				continue // never applied: nothing recorded to drift from
			}
			if err != nil {
				return nil, &StateError{Op: "read", ID: s.nodes[k].id, Err: err}
			}
			recs = append(recs, rec)
		}
	} else {
		if recs, err = e.store.List(ctx, state.Filter{}); err != nil {
			return nil, err
		}
	}
	p := &Plan{g: graph.New[string](), byKey: map[string]*Change{}}
	p.Changes = make([]Change, 0, len(recs))
	var errs []error
	for _, rec := range recs {
		c, err := e.driftOne(ctx, rec)
		if err != nil {
			errs = append(errs, wrapf(err, "drift %s", rec.ID().Short()))
			continue
		}
		if c == nil {
			continue
		}
		p.Changes = append(p.Changes, *c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(p.Changes, func(a, b Change) int { return a.ID.Compare(b.ID) })
	for i := range p.Changes {
		k := p.Changes[i].ID.String()
		p.g.AddNode(k)
		p.byKey[k] = &p.Changes[i]
	}
	return p, nil
}

// driftOne compares one record with its live resource; nil for a record
// of a read-only kind.
func (e *Engine) driftOne(ctx context.Context, rec *state.Record) (*Change, error) {
	id := rec.ID()
	prov, kind, err := e.reg.Lookup(id)
	if err != nil {
		return nil, err
	}
	if kind.ReadOnly {
		return nil, nil
	}
	res := rec.Resource()
	res.Status = nil
	res.Spec = recordedSpec(rec)
	n := &node{id: id, key: id.String(), res: res, prov: prov, kind: kind, owner: rec.Owner}
	c := &Change{ID: id, Owner: rec.Owner, Action: ActionNoOp}
	live, err := e.get(ctx, n, "")
	if errcode.Is(err, errcode.NotFound) {
		c.Action = ActionCreate
		c.Reasons = []string{"recorded in state but gone (deleted outside openctl): apply would create it again"}
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	var resolved *manifest.Resource
	if err := e.safe("resolve", id, func() (err error) { resolved, err = refs.Resolve(ctx, getter{e}, res); return err }); err != nil {
		return nil, err
	}
	if rs, err := refs.Collect(res); err == nil {
		c.DependsOn = targets(rs)
	}
	if d, ok := prov.(registry.Differ); ok {
		var diff registry.Diff
		if _, err := e.retry(ctx, id, "", func(ctx context.Context) error {
			return e.safe("diff", id, func() (err error) { diff, err = d.Diff(ctx, resolved, live); return err })
		}); err != nil {
			return nil, err
		}
		c.Action, c.Fields = diffAction(diff.Action), diff.Fields
		if c.Action != ActionNoOp {
			c.Reasons = append([]string{"changed outside openctl"}, diff.Reasons...)
		}
	} else if fields := manifest.Diff("spec", resolved.Spec, live.Spec); len(fields) > 0 {
		c.Action, c.Fields = ActionUpdate, fields
		c.Reasons = []string{"changed outside openctl"}
	}
	if c.Action == ActionNoOp {
		c.Fields = nil
	}
	c.Fields = redactFields(kind.SecretFields, c.Fields)
	return c, nil
}
