package registry

import (
	"context"

	"github.com/openctl/openctl/manifest"
)

type priorKey struct{}

// WithPrior returns a context carrying prior: the resource as the state
// last recorded it (spec as written, status as last read). The engine
// installs it for every Get and Delete of a kind whose Kind.ReadsPrior is
// set.
func WithPrior(ctx context.Context, prior *manifest.Resource) context.Context {
	return context.WithValue(ctx, priorKey{}, prior)
}

// Prior returns the recorded resource ctx carries, or nil when there is
// none: the resource was never recorded, or the caller is not the engine.
//
// A provider whose live resources cannot be found from their identity
// alone — a K3s node is a service on a machine only its last status
// locates — reads where to look from it, as Terraform providers read
// their prior state; it must still read the resource itself live, and
// answer errcode.NotFound when there is neither a prior nor a way to
// find it.
func Prior(ctx context.Context) *manifest.Resource {
	r, _ := ctx.Value(priorKey{}).(*manifest.Resource)
	return r
}
