package openctl

import (
	"context"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/registry"
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

// withPrior returns ctx carrying id's record as registry.Prior when id's
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
	return registry.WithPrior(ctx, rec.Resource()), nil
}
