package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
)

// Dispatcher applies a resource a plugin asked for in a dispatch
// request and returns it as it is once its waitFor condition holds.
type Dispatcher interface {
	Dispatch(ctx context.Context, req DispatchRequest) (*manifest.Resource, error)
}

// RegistryDispatcher dispatches through a registry: each request's
// manifest is applied by the provider serving its group (compiled in or
// a plugin), and its waitFor condition is polled with Get, with backoff,
// until it holds or its timeout (default 5m) passes.
//
// It does not record what it applies in a state store: that is the
// engine's part (see the package documentation).
type RegistryDispatcher struct {
	Registry *registry.Registry
}

// Dispatch implements Dispatcher.
func (d RegistryDispatcher) Dispatch(ctx context.Context, req DispatchRequest) (*manifest.Resource, error) {
	if req.Manifest == nil {
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: no manifest", req.ID))
	}
	switch req.Action {
	case ActionCreate, ActionApply, "":
	default:
		return nil, errcode.New(errcode.Invalid, fmt.Sprintf("plugin: dispatch %s: action %q is not supported (create, apply)", req.ID, req.Action))
	}
	p, _, err := d.Registry.Lookup(req.Manifest.ID())
	if err != nil {
		return nil, err
	}
	r, err := p.Apply(ctx, req.Manifest)
	if err != nil || req.WaitFor == nil {
		return r, err
	}
	return waitFor(ctx, p, r, *req.WaitFor)
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
