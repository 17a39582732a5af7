package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
)

// Dispatcher carries out what a plugin asks of other providers.
type Dispatcher interface {
	// Dispatch applies (action create or apply) or deletes (action
	// delete) the resource of a dispatch request and returns it as it
	// is once its waitFor condition holds (nil after a delete). The
	// request's manifest carries the owner labels of the resource the
	// plugin is applying.
	Dispatch(ctx context.Context, req DispatchRequest) (*manifest.Resource, error)
	// Resolve returns the identity of a child a stateUpdate names by
	// provider, kind and name.
	Resolve(ref ChildRef) (manifest.ID, error)
}

// RegistryDispatcher dispatches through a registry: each request's
// manifest has its $refs resolved and is applied (or deleted) by the
// provider serving its group — compiled in or a plugin — and its waitFor
// condition is polled with Get, with backoff, until it holds or its
// timeout (default 5m) passes.
//
// Every resource it applies or deletes is reported to the
// registry.ChildRecorder the context carries (the engine installs one
// per resource), right after its provider acted and before any waiting:
// state then knows the child even when the wait fails or the run is
// killed, and deleting the plugin's resource deletes the child first.
type RegistryDispatcher struct {
	Registry *registry.Registry
}

// Dispatch implements Dispatcher.
func (d RegistryDispatcher) Dispatch(ctx context.Context, req DispatchRequest) (*manifest.Resource, error) {
	if req.Manifest == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: no manifest", req.ID))
	}
	id := req.Manifest.ID()
	if req.ResourceType != "" && req.ResourceType != id.Kind {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: resourceType %q but the manifest is a %s", req.ID, req.ResourceType, id.Kind))
	}
	if err := id.Validate(); err != nil {
		return nil, errcode.Wrap(errcode.Invalid, "plugin: dispatch "+req.ID, err)
	}
	name, _, err := d.Registry.Route(id)
	if err != nil {
		return nil, err
	}
	if req.Provider != "" && req.Provider != name {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: provider %q, but %s is served by %s", req.ID, req.Provider, id.APIVersion, name))
	}
	p, kind, err := d.Registry.Lookup(id)
	if err != nil {
		return nil, err
	}
	switch {
	case kind.ReadOnly:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: kind %s is read-only", req.ID, id.Kind))
	case kind.Composite:
		// Its children come from its Plan, which only the engine runs.
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: kind %s is a composite; it cannot be dispatched, only applied by openctl itself", req.ID, id.Kind))
	}
	rec := registry.CallOf(ctx).Children
	switch req.Action {
	case ActionCreate, ActionApply, "":
	case ActionDelete:
		if err := p.Delete(ctx, id); err != nil && !errcode.Is(err, errcode.NotFound) {
			return nil, err
		}
		if rec != nil {
			return nil, rec.ChildDeleted(ctx, id)
		}
		return nil, nil
	default:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: action %q is not supported (create, apply, delete)", req.ID, req.Action))
	}
	resolved, err := refs.Resolve(ctx, d.Registry, req.Manifest)
	if err != nil {
		return nil, err
	}
	r, err := p.Apply(ctx, resolved)
	if err != nil {
		return nil, err
	}
	if r == nil || r.ID() != id {
		return nil, errcode.New(errcode.Internal, fmt.Sprintf("plugin: dispatch %s: provider %s returned another resource from Apply", req.ID, name))
	}
	if rec != nil {
		if err := rec.ChildApplied(ctx, req.Manifest, r); err != nil {
			return nil, err
		}
	}
	if req.WaitFor == nil {
		return r, nil
	}
	return waitFor(ctx, p, r, *req.WaitFor)
}

// Resolve implements Dispatcher: the kind is looked up among the
// provider's kinds, the apiVersion is its group and first version ("v1"
// when it lists none).
func (d RegistryDispatcher) Resolve(ref ChildRef) (manifest.ID, error) {
	k, err := d.Registry.ResolveKind(ref.Kind + "." + ref.Provider)
	if err != nil {
		return manifest.ID{}, errcode.Wrap(errcode.Invalid, fmt.Sprintf("plugin: stateUpdate child %s %s/%s", ref.Provider, ref.Kind, ref.Name), err)
	}
	version := "v1"
	if len(k.Versions) > 0 {
		version = k.Versions[0]
	}
	return manifest.ID{APIVersion: k.Group + "/" + version, Kind: k.Kind.Kind, Name: ref.Name}, nil
}

// waitFor polls p.Get until the field of w has w's value.
func waitFor(ctx context.Context, p registry.Provider, r *manifest.Resource, w WaitFor) (*manifest.Resource, error) {
	timeout := 5 * time.Minute
	if w.Timeout != "" {
		d, err := time.ParseDuration(w.Timeout)
		if err != nil {
			return nil, errcode.Wrap(errcode.Invalid, "plugin: waitFor timeout", err)
		}
		timeout = d
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}.Start()
	for {
		v, found, err := manifest.Field(r.Object(), w.Field)
		if err == nil && found && fmt.Sprint(v) == fmt.Sprint(w.Value) {
			return r, nil
		}
		if err := b.Wait(ctx); err != nil {
			return nil, errcode.Wrap(errcode.Transient, fmt.Sprintf("plugin: waiting for %s %s = %v", r.ID(), w.Field, w.Value), err)
		}
		if r, err = p.Get(ctx, r.ID()); err != nil {
			return nil, err
		}
	}
}
