package registry

import (
	"context"

	"github.com/openctl/openctl/manifest"
)

type priorKey struct{}

// WithPrior returns a context carrying prior: the resource as the state
// last recorded it (spec as written, status as last read, secret fields
// in clear). The engine installs it for every Get, Apply, Delete and
// action of a kind whose Kind.ReadsPrior is set, when there is a record.
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

// Records reads the state's records of a kind: what openctl knows it
// made. The engine installs one for every provider call of Apply, Plan,
// Delete and Get, for providers whose resources refer to others by name
// and must check what exists (a K3s node joining "the" cluster, refused
// when there are several).
type Records interface {
	// Records returns the recorded resources of a kind, sorted by name.
	Records(ctx context.Context, apiVersion, kind string) ([]*manifest.Resource, error)
}

type recordsKey struct{}

// WithRecords returns a context carrying r.
func WithRecords(ctx context.Context, r Records) context.Context {
	return context.WithValue(ctx, recordsKey{}, r)
}

// RecordsOf returns the Records ctx carries, or nil when there are none
// (a provider used without an engine).
func RecordsOf(ctx context.Context) Records {
	r, _ := ctx.Value(recordsKey{}).(Records)
	return r
}

type cascadeKey struct{}

// WithCascade returns a context that says the resource being deleted goes
// because its owner is deleted in the same operation.
func WithCascade(ctx context.Context) context.Context {
	return context.WithValue(ctx, cascadeKey{}, true)
}

// Cascade reports whether the current delete is part of deleting the
// resource's owner — a K3s node deleted with its whole cluster need not
// be drained first — rather than of the resource alone or of its owner
// shrinking (a pruned child).
func Cascade(ctx context.Context) bool {
	v, _ := ctx.Value(cascadeKey{}).(bool)
	return v
}
