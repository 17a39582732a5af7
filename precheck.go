package openctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// The preconditions of an operation, checked after the input is valid
// (build) and, for Apply and Delete, the state lock is taken, but before
// the first provider write:
//
//   - the state store's identity, if it has one (state.Identified), which
//     every provider call then sees as registry.Call.Owner;
//   - that the store can seal and open secrets, when a resource's kind has
//     secret fields and the store can say so (Unlock, see storeUnlocker);
//   - that every $ref target outside the call exists live.

// StateError reports that the state store could not do what the operation
// needed: Op is "identify" (state.Identified's StoreID), "unlock" (make
// sure secrets can be sealed and opened: the state passphrase), "read" (a
// record), "record" (write a record after the provider made a change) or
// "forget" (remove the record of a deleted resource).
// Its code is the store error's (errors.Is and errcode.Of see through it):
// for "unlock", Unauthorized means a wrong passphrase and Invalid a
// missing or unusable one.
type StateError struct {
	Op  string
	ID  manifest.ID // the resource, for "read", "record" and "forget"; zero otherwise
	Err error
}

// Error names what the store could not do and why.
func (e *StateError) Error() string {
	var what string
	switch e.Op {
	case "identify":
		what = "reading the state store's identity"
	case "unlock":
		what = "the state store cannot seal or open secrets"
	case "record":
		what = "recording " + e.ID.Short() + " in the state (it was applied)"
	case "read":
		what = "reading the record of " + e.ID.Short() + " from the state"
	case "forget":
		what = "forgetting " + e.ID.Short() + " in the state (it was deleted)"
	case "list":
		what = "listing the records in the state"
	default:
		what = e.Op + " " + e.ID.Short() + " in the state"
	}
	return "openctl: " + what + ": " + trimPrefix(e.Err)
}

// Unwrap returns the store's error.
func (e *StateError) Unwrap() error { return e.Err }

// identify returns ctx carrying the store's identity as registry.Call.Owner,
// read once, when the store has one, and the store's records and live
// reads as registry.Call.Records and Read.
func (e *Engine) identify(ctx context.Context) (context.Context, error) {
	ctx = e.withReads(ctx)
	st, ok := e.store.(state.Identified)
	if !ok {
		return ctx, nil
	}
	id, err := st.StoreID(ctx)
	if err == nil && id == "" {
		err = errcode.New(errcode.Internal, "state: StoreID returned an empty identity")
	}
	if err != nil {
		return nil, &StateError{Op: "identify", Err: err}
	}
	return withCall(ctx, func(c *registry.Call) { c.Owner = id }), nil
}

// maySeal reports whether recording n may need to seal a secret: its
// kind has a secret status field (the provider may report one), or its
// spec sets one of the kind's secret spec fields.
func maySeal(n *node) bool {
	for _, f := range n.kind.SecretFields {
		path, inSpec := strings.CutPrefix(f, "spec.")
		if !inSpec {
			return true
		}
		if v, found, _ := manifest.Field(n.res.Spec, path); found && v != nil && v != "" {
			return true
		}
	}
	return false
}

// checkSealing makes sure the store can seal and open secrets when a resource
// of s may have some (its kind declares secret fields).
func (e *Engine) checkSealing(ctx context.Context, s *set) error {
	u, ok := e.store.(state.Unlocker)
	if !ok {
		return nil
	}
	need := false
	for _, n := range s.nodes {
		need = need || maySeal(n)
	}
	if !need {
		return nil
	}
	if err := u.Unlock(ctx); err != nil {
		return &StateError{Op: "unlock", Err: err}
	}
	return nil
}

// checkRefs makes sure that every $ref of s to a resource outside s
// points at a resource that exists: one the provider finds live, which is
// where Resolve reads it. Every failure is reported, joined, each naming
// the referring resource and the marker.
func (e *Engine) checkRefs(ctx context.Context, s *set) error {
	type use struct {
		n   *node
		ref refs.Ref
	}
	uses := map[manifest.ID][]use{}
	for _, k := range slices.Sorted(maps.Keys(s.nodes)) {
		n := s.nodes[k]
		if n.del {
			continue
		}
		for _, r := range n.refs {
			if s.node(r.Target) == nil {
				uses[r.Target] = append(uses[r.Target], use{n, r})
			}
		}
	}
	var errs []error
	for _, target := range slices.SortedFunc(maps.Keys(uses), manifest.ID.Compare) {
		_, err := e.live(ctx, target)
		if err == nil {
			continue
		}
		for _, u := range uses[target] {
			if errcode.Is(err, errcode.NotFound) {
				errs = append(errs, wrapf(refs.TargetNotFound(u.n.id, u.ref, "it is not among the resources given and its provider does not find it"), "%s%s", u.n.id.Short(), at(u.n.res)))
				continue
			}
			errs = append(errs, wrapf(err, "%s%s: %s: cannot read the $ref target %s", u.n.id.Short(), at(u.n.res), u.ref.Path, target.Short()))
		}
	}
	return errors.Join(errs...)
}

// place lets each provider that is a registry.Placer choose what the
// manifests of its resources to apply leave open, and notes on each node
// what was chosen (node.placed), which a plan shows for a create.
func (e *Engine) place(ctx context.Context, s *set) error {
	order, byProvider := s.byProvider(func(n *node) bool {
		_, ok := n.prov.(registry.Placer)
		return ok && !n.del
	})
	var errs []error
	for _, p := range order {
		placer := p.(registry.Placer)
		ns := byProvider[p]
		rs := make([]*manifest.Resource, len(ns))
		before := make([]map[string]any, len(ns))
		for i, n := range ns {
			rs[i], before[i] = n.res, manifest.CopyMap(n.res.Spec)
		}
		_, err := e.retry(ctx, manifest.ID{}, "", func(ctx context.Context) error {
			return e.safe("place", manifest.ID{}, func() error { return placer.Place(ctx, rs) })
		})
		if err != nil {
			errs = append(errs, wrapf(err, "provider %s cannot place what it is to create", p.Name()))
			continue
		}
		for i, n := range ns {
			n.placed = manifest.Diff("spec", before[i], n.res.Spec)
		}
	}
	return errors.Join(errs...)
}

// byProvider groups the nodes of s that keep accepts by provider: the
// providers in the order of their first node, each one's nodes in key
// order.
func (s *set) byProvider(keep func(*node) bool) ([]registry.Provider, map[registry.Provider][]*node) {
	by := map[registry.Provider][]*node{}
	var order []registry.Provider
	for _, k := range slices.Sorted(maps.Keys(s.nodes)) {
		n := s.nodes[k]
		if !keep(n) {
			continue
		}
		if _, seen := by[n.prov]; !seen {
			order = append(order, n.prov)
		}
		by[n.prov] = append(by[n.prov], n)
	}
	return order, by
}

// providerChecks asks the provider of each resource to apply whether it
// would refuse it (registry.Checker), returning the refusals by node key,
// each naming its resource and where it was written.
func (e *Engine) providerChecks(ctx context.Context, s *set) map[string]error {
	refusals := map[string]error{}
	for _, k := range slices.Sorted(maps.Keys(s.nodes)) {
		n := s.nodes[k]
		c, ok := n.prov.(registry.Checker)
		if !ok || n.del {
			continue
		}
		if err := e.safe("check", n.id, func() error { return c.Check(ctx, n.res) }); err != nil {
			refusals[k] = wrapf(err, "%s%s", n.id.Short(), at(n.res))
		}
	}
	return refusals
}

// checkRefFields reports the $refs of n that name a field their target's
// kind declares it can never have (registry.Kind.Fields).
func checkRefFields(n *node, kindOf func(manifest.ID) (registry.Kind, bool)) []error {
	var errs []error
	for _, r := range n.refs {
		k, ok := kindOf(r.Target)
		if !ok || k.HasField(r.Field) {
			continue
		}
		e := &refs.Error{Resource: n.id, Path: r.Path, Target: r.Target, Field: r.Field, Code: errcode.Invalid,
			Msg: fmt.Sprintf("kind %s has no field %s (its fields: %s)", r.Target.Kind, r.Field, strings.Join(k.Fields, ", "))}
		errs = append(errs, wrapf(e, "%s%s", n.id.Short(), at(n.res)))
	}
	return errs
}

// opError is an error of the engine: "openctl: <what>: <cause>", where a
// cause that names openctl already ("openctl: ...") does not say it again.
type opError struct {
	what string
	err  error
}

func (e *opError) Error() string { return "openctl: " + e.what + ": " + trimPrefix(e.err) }

func (e *opError) Unwrap() error { return e.err }

// wrapf returns err as "openctl: <format...>: <err>", saying "openctl:"
// once.
func wrapf(err error, format string, args ...any) error {
	return &opError{what: fmt.Sprintf(format, args...), err: err}
}

// trimPrefix returns err's message without a leading "openctl: ".
func trimPrefix(err error) string {
	return strings.TrimPrefix(err.Error(), "openctl: ")
}

// pingProviders asks every provider of s that is a registry.Pinger
// whether it can reach and use its endpoints for its resources of s,
// before anything is changed. Every failure is reported, joined.
func (e *Engine) pingProviders(ctx context.Context, s *set) error {
	order, byProvider := s.byProvider(func(n *node) bool {
		_, ok := n.prov.(registry.Pinger)
		return ok && !n.kind.ReadOnly
	})
	var errs []error
	for _, p := range order {
		pinger := p.(registry.Pinger)
		rs := make([]*manifest.Resource, len(byProvider[p]))
		for i, n := range byProvider[p] {
			rs[i] = n.res
		}
		_, err := e.retry(ctx, manifest.ID{}, "", func(ctx context.Context) error {
			return e.safe("ping", manifest.ID{}, func() error { return pinger.Ping(ctx, rs) })
		})
		if err != nil {
			errs = append(errs, wrapf(err, "provider %s cannot be used", p.Name()))
		}
	}
	return errors.Join(errs...)
}
