package openctl

import (
	"context"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/state"
)

// getter reads live resources through the registry, handing providers
// whose kinds read it (registry.Kind.ReadsPrior) the resource's state
// record. It implements refs.Getter: $refs resolve through it.
type getter struct{ e *Engine }

func (g getter) Get(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
	ctx, err := g.e.withPrior(ctx, id)
	if err != nil {
		return nil, err
	}
	return g.e.reg.Get(ctx, id)
}

// withReads returns ctx carrying the state's records and live reads
// (registry.Call.Records and Read).
func (e *Engine) withReads(ctx context.Context) context.Context {
	return withCall(ctx, func(c *registry.Call) { c.Records, c.Read = records{e}, getter{e}.Get })
}

// withPrior returns ctx carrying id's record as registry.Call.Prior when id's
// kind reads it and the state has one.
func (e *Engine) withPrior(ctx context.Context, id manifest.ID) (context.Context, error) {
	_, kind, err := e.reg.Lookup(id)
	if err != nil || !kind.ReadsPrior {
		return ctx, nil // an unknown kind fails in the Get itself
	}
	rec, err := e.store.Get(ctx, id)
	switch {
	case errcode.Is(err, errcode.NotFound):
		return ctx, nil
	case err != nil:
		return ctx, &StateError{Op: "read", ID: id, Err: err}
	}
	return withCall(ctx, func(c *registry.Call) { c.Prior = rec.Revealed() }), nil
}

// records is registry.Records over the engine's store.
type records struct{ e *Engine }

func (r records) Records(ctx context.Context, apiVersion, kind string) ([]*manifest.Resource, error) {
	id := manifest.ID{APIVersion: apiVersion, Kind: kind}
	recs, err := r.e.store.List(ctx, state.Filter{Group: id.Group(), Kind: kind})
	if err != nil {
		return nil, &StateError{Op: "list", Err: err}
	}
	out := make([]*manifest.Resource, 0, len(recs))
	for _, rec := range recs {
		if rec.APIVersion == apiVersion {
			out = append(out, rec.Resource())
		}
	}
	return out, nil
}

// withCall returns ctx carrying the registry.Call ctx carries, changed by
// f: each step of an operation adds what it knows to the call its
// provider calls see.
func withCall(ctx context.Context, f func(c *registry.Call)) context.Context {
	c := registry.CallOf(ctx)
	f(&c)
	return registry.WithCall(ctx, c)
}
