package registry

import "context"

type ownerKey struct{}

// WithOwner returns a context carrying owner, the identity of the state
// store the engine records what it applies in (state.Identified). The
// engine installs it for every provider call of Apply, Plan and Delete.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// Owner returns the identity of the state store the current operation
// records into, or "" when the caller installed none (a provider used on
// its own, without an engine).
//
// Providers that mark what they create (a tag, a line in a description)
// record it there, so that two openctl installations with different state
// stores never adopt, change or delete each other's resources of the
// same name: a resource marked with another owner is an
// errcode.AlreadyExists error. A resource marked with no owner (created
// before owners were recorded, or without an engine) may be adopted.
func Owner(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}
