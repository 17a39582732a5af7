package openctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// Apply creates or updates resources so that they match their manifests.
//
// It builds one dependency graph over every resource in the call — the
// manifests given and the children composite providers plan for them —
// with an edge for every $ref and from each child to its owner, and
// rejects the whole call before changing anything if a manifest is
// invalid, routes to no provider, is defined twice or takes part in a
// dependency cycle. It then takes the state lock and checks, still before
// any provider write, the preconditions: it reads the state store's
// identity (state.Identified), which every provider call then sees as
// registry.Call.Owner; it asks a store that can say so (a method
// Unlock(ctx) error) whether it can seal and open secrets, when a kind
// has secret fields; and it makes sure every $ref target outside the call
// exists. A failure there is returned with a nil Report; a state store's
// failure is a *StateError. It then works through the graph, independent resources in parallel up to the engine's
// concurrency: for each resource it resolves $refs from live values,
// skips the provider entirely when the resolved spec's hash matches the
// one recorded in state and the resource still exists, otherwise calls the
// provider's Apply (retrying transient errors), waits for readiness when
// the provider reports it, and records the result.
//
// A composite whose Plan no longer produces a child it produced before
// (scaled down) has that child deleted — in reverse dependency order, before
// the composite itself is applied; such deletes appear in the report with
// OutcomeDeleted.
//
// A failure skips only the resources that depend on the failed one. The
// report has one Result per resource; the error is the failures joined
// (nil when everything succeeded).
func (e *Engine) Apply(ctx context.Context, resources ...*manifest.Resource) (*Report, error) {
	s, err := e.build(ctx, resources)
	if err != nil {
		return nil, err
	}
	unlock, err := e.lock(ctx, "apply")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if ctx, err = e.identify(ctx); err != nil {
		return nil, err
	}
	if err := e.checkSealing(ctx, s); err != nil {
		return nil, err
	}
	if err := e.moveAliasRecords(ctx, applyIDs(s)); err != nil {
		return nil, err
	}
	if err := e.addPrunes(ctx, s); err != nil {
		return nil, err
	}
	if err := e.checkRefs(ctx, s); err != nil {
		return nil, err
	}
	if err := e.place(ctx, s); err != nil {
		return nil, err
	}
	for k, err := range e.providerChecks(ctx, s) {
		s.nodes[k].refused = err
	}
	if err := e.pingProviders(ctx, s); err != nil {
		return nil, err
	}
	return e.run(ctx, s)
}

func (e *Engine) applyOne(ctx context.Context, n *node, p *progress) error {
	id := n.id
	fail := func(err error) error { return wrapf(err, "apply %s%s", id.Short(), at(n.res)) }
	ctx = withCall(ctx, func(c *registry.Call) {
		c.Step = func(step string) { e.emit(Event{Type: EventStep, ID: id, Op: "apply", Step: step}) }
	})
	// A composite's children are what its Plan says; any other provider
	// may apply children of its own (an exec plugin dispatching), which
	// its record then lists.
	var kids *childLog
	if !n.kind.Composite {
		kids = newChildLog(e, id)
		ctx = withCall(ctx, func(c *registry.Call) { c.Children = kids })
	}

	resolved, err := e.resolveForApply(ctx, n)
	if err != nil {
		return fail(err)
	}
	rec, err := e.store.Get(ctx, id)
	if err != nil && !errcode.Is(err, errcode.NotFound) {
		return fail(&StateError{Op: "read", ID: id, Err: err})
	}
	if err != nil {
		rec = nil
	}
	if kids != nil && rec != nil {
		n.children = rec.Children
	}
	if resolved, err = restoreSecrets(n, resolved, rec); err != nil {
		return fail(err)
	}
	hash := manifest.Hash(resolved.Spec)
	outcome := OutcomeCreated
	if rec != nil {
		outcome = OutcomeUpdated
		if rec.SpecHash == hash {
			live, err := e.get(ctx, n, "apply")
			drift := false
			if err == nil {
				// The spec did not change; a Differ may still see drift
				// (someone edited the resource outside openctl), which
				// Plan reports and Apply must then correct.
				if drift, err = e.drifted(ctx, n, resolved, live); err != nil {
					return fail(err)
				}
			}
			switch {
			case err == nil && drift:
				e.log.Info("drifted from its manifest; applying", "resource", id.String())
			case err == nil:
				p.outcome, p.res = OutcomeUnchanged, live
				e.log.Debug("unchanged", "resource", id.String())
				if err := e.record(ctx, n, rec, hash, live, true); err != nil {
					return fail(&StateError{Op: "record", ID: id, Err: err})
				}
				return nil
			case errcode.Is(err, errcode.NotFound):
				e.log.Info("recorded resource is gone; creating it again", "resource", id.String())
				outcome = OutcomeCreated
			default:
				return fail(err)
			}
		}
	}

	ctx = withCall(ctx, func(c *registry.Call) {
		if n.kind.ReadsPrior && rec != nil {
			c.Prior = rec.Revealed()
		}
		if n.parent != nil {
			c.Parent = n.parent.DeepCopy()
		}
	})
	var out *manifest.Resource
	attempts, err := e.retry(ctx, id, "apply", func(ctx context.Context) error {
		return e.safe("apply", id, func() (err error) { out, err = n.prov.Apply(ctx, resolved); return err })
	})
	p.attempts = attempts
	if kids != nil {
		n.children = kids.children(n.children)
	}
	if err != nil {
		return fail(err)
	}
	if out == nil || out.ID() != id {
		got := "nil"
		if out != nil {
			got = out.ID().Short()
		}
		return fail(errcode.New(errcode.Internal, fmt.Sprintf("provider %q returned %s from Apply", n.prov.Name(), got)))
	}
	// The provider made the change: record it even if ctx was cancelled
	// meanwhile, so that state never forgets a resource that exists.
	wctx, cancel := afterWrite(ctx)
	defer cancel()
	if err := e.record(wctx, n, rec, hash, out, false); err != nil {
		return fail(&StateError{Op: "record", ID: id, Err: err})
	}
	p.outcome, p.res = outcome, out
	e.log.Info(string(outcome), "resource", id.String(), "attempts", attempts)
	return nil
}

// drifted asks a Differ provider whether the live resource still matches
// the resolved spec that state records as applied.
func (e *Engine) drifted(ctx context.Context, n *node, resolved, live *manifest.Resource) (bool, error) {
	d, ok := n.prov.(registry.Differ)
	if !ok {
		return false, nil
	}
	var diff registry.Diff
	_, err := e.retry(ctx, n.id, "apply", func(ctx context.Context) error {
		return e.safe("diff", n.id, func() (err error) { diff, err = d.Diff(ctx, resolved, live); return err })
	})
	return err == nil && diff.Action != registry.DiffNone, err
}

// get reads n's live resource for op, retrying transient errors.
func (e *Engine) get(ctx context.Context, n *node, op string) (*manifest.Resource, error) {
	ctx, err := e.withPrior(ctx, n.id)
	if err != nil {
		return nil, err
	}
	var live *manifest.Resource
	_, err = e.retry(ctx, n.id, op, func(ctx context.Context) error {
		return e.safe("get", n.id, func() (err error) { live, err = n.prov.Get(ctx, n.id); return err })
	})
	return live, err
}

// resolveForApply resolves n's $refs. A field its target's kind declares
// (registry.Kind.Fields) but the target does not report yet — a VM's host
// key before its guest agent answers — is waited for like readiness: the
// target is read again with backoff until it has the field or the ready
// timeout passes, each wait reported as an EventWaiting.
func (e *Engine) resolveForApply(ctx context.Context, n *node) (*manifest.Resource, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, e.ready.Timeout)
	defer cancel()
	b := backoff.Policy{Initial: e.ready.Initial, Max: e.ready.Max, Multiplier: 1.5, Jitter: 0.1}.Start()
	var missing error // the last attempt that found the field missing
	for {
		var resolved *manifest.Resource
		_, err := e.retry(ctx, n.id, "apply", func(ctx context.Context) error {
			return e.safe("resolve", n.id, func() (err error) { resolved, err = refs.Resolve(ctx, getter{e}, n.res); return err })
		})
		var rerr *refs.Error
		if err == nil || !errors.Is(err, refs.ErrFieldNotFound) || !errors.As(err, &rerr) || !e.declares(rerr.Target, rerr.Field) {
			if err != nil && parent.Err() == nil && ctx.Err() != nil {
				// The wait ran out during an attempt: what was waited
				// for is the field the earlier attempts found missing.
				if missing != nil {
					err = missing
				}
				return nil, fmt.Errorf("%w (waited %s for it)", err, e.ready.Timeout)
			}
			return resolved, err
		}
		missing = err
		if werr := e.willReport(ctx, rerr.Target, rerr.Field); werr != nil {
			return nil, fmt.Errorf("%w (%w)", werr, err)
		}
		e.emit(Event{Type: EventWaiting, ID: n.id, Op: "apply", Step: fmt.Sprintf("waiting for %s to report %s", rerr.Target.Short(), rerr.Field)})
		if werr := b.Wait(ctx); werr != nil {
			if parent.Err() == nil {
				return nil, fmt.Errorf("%w (waited %s for it)", err, e.ready.Timeout)
			}
			return nil, fmt.Errorf("%w (%v)", context.Cause(parent), err)
		}
	}
}

// willReport asks target's provider (registry.Producer) whether the live
// target will report field: an error says why it will not. A target that
// cannot be read, or a provider that cannot tell, lets the wait go on.
func (e *Engine) willReport(ctx context.Context, target manifest.ID, field string) error {
	p, _, err := e.reg.Lookup(target)
	if err != nil {
		return nil
	}
	pr, ok := p.(registry.Producer)
	if !ok {
		return nil
	}
	live, err := e.live(ctx, target)
	if err != nil {
		return nil
	}
	return pr.WillReport(live, field)
}

// declares reports whether id's kind lists field among the fields it can
// have (registry.Kind.Fields), explicitly: a kind that declares none
// promises nothing.
func (e *Engine) declares(id manifest.ID, field string) bool {
	_, kind, err := e.reg.Lookup(id)
	return err == nil && len(kind.Fields) > 0 && kind.HasField(field)
}

// record writes n's state record. With statusOnly, it writes only when
// something recorded (status, labels, the spec as written, children)
// differs, so an unchanged resource costs no write when nothing moved.
func (e *Engine) record(ctx context.Context, n *node, prev *state.Record, hash string, live *manifest.Resource, statusOnly bool) error {
	status, secrets := splitSecrets(n.kind.SecretFields, "status.", live.Status)
	spec, specSecrets := splitSecrets(n.kind.SecretFields, "spec.", n.res.Spec)
	if len(specSecrets) > 0 {
		if secrets == nil {
			secrets = map[string]secret.Secret{}
		}
		for p, v := range specSecrets {
			if v.Reveal() == secret.Redacted {
				// "[redacted]" was applied as "keep the sealed value".
				kept, ok := prev.SecretValue(p)
				if !ok {
					continue
				}
				v = kept
			}
			secrets[p] = v
		}
	}
	rec := &state.Record{
		APIVersion: n.id.APIVersion, Kind: n.id.Kind, Name: n.id.Name,
		Labels:   n.res.Metadata.Labels,
		Spec:     spec,
		SpecHash: hash,
		Status:   status,
		Owner:    n.owner,
		Children: n.children,
		Secrets:  secrets,
	}
	if prev != nil {
		rec.Generation, rec.Lineage, rec.CreatedAt = prev.Generation, prev.Lineage, prev.CreatedAt
		if statusOnly && sameRecord(prev, rec) {
			return nil
		}
	}
	_, err := e.store.Put(ctx, rec)
	return err
}

func sameRecord(a, b *state.Record) bool {
	return manifest.Equal(a.Status, b.Status) &&
		manifest.Equal(a.Spec, b.Spec) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Secrets, b.Secrets) &&
		slices.Equal(a.Children, b.Children) &&
		((a.Owner == nil) == (b.Owner == nil)) && (a.Owner == nil || *a.Owner == *b.Owner)
}

// restoreSecrets puts back the sealed value of every secret spec field
// that reads "[redacted]" — what `openctl get -o yaml` prints — so that
// output fed back to apply means "keep the secret". Without a sealed value
// to restore, it is an error rather than a password of "[redacted]".
func restoreSecrets(n *node, r *manifest.Resource, rec *state.Record) (*manifest.Resource, error) {
	var out *manifest.Resource
	for _, p := range n.kind.SecretFields {
		path, ok := strings.CutPrefix(p, "spec.")
		if !ok {
			continue
		}
		v, found, _ := manifest.Field(r.Spec, path)
		if !found || v != secret.Redacted {
			continue
		}
		sealed, ok := rec.SecretValue(p)
		if !ok {
			return nil, errcode.New(errcode.Invalid, fmt.Sprintf("%s is %s but state holds no sealed value to keep: give the real value", p, secret.Redacted))
		}
		if out == nil {
			out = r.DeepCopy()
		}
		if err := manifest.SetField(out.Spec, path, sealed.Reveal()); err != nil {
			return nil, errcode.Wrap(errcode.Internal, "restoring "+p, err)
		}
	}
	if out == nil {
		return r, nil
	}
	return out, nil
}

// splitSecrets removes the secret fields under prefix ("status." or
// "spec.") from a copy of m and returns them separately, rendered as
// strings. A $ref marker in a spec is not a secret value and stays.
func splitSecrets(paths []string, prefix string, m0 map[string]any) (map[string]any, map[string]secret.Secret) {
	if len(paths) == 0 || m0 == nil {
		return m0, nil
	}
	status := manifest.CopyMap(m0)
	secrets := map[string]secret.Secret{}
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		keys := strings.Split(rest, ".")
		m := status
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				m = nil
				break
			}
			m = next
		}
		if m == nil {
			continue
		}
		last := keys[len(keys)-1]
		v, ok := m[last]
		if !ok || refs.IsMarker(v) {
			continue
		}
		delete(m, last)
		if s, ok := v.(string); ok {
			secrets[p] = secret.New(s)
		} else {
			secrets[p] = secret.New(fmt.Sprint(v))
		}
	}
	return status, secrets
}
