package registry

import (
	"context"

	"github.com/openctl/openctl/manifest"
)

// ChildRecorder records the resources a provider applies or deletes
// through other providers while it applies or deletes the resource it was
// asked to — an exec plugin's dispatched resources — as that resource's
// children, so that state knows them and deleting the resource deletes
// them first. (A composite that can say its children up front implements
// [Planner] instead: the engine then applies them itself.)
//
// The engine installs one per resource it applies or deletes
// ([Call].Children).
// Implementations are safe for concurrent use.
type ChildRecorder interface {
	// ChildApplied records child — the manifest as it was applied, $ref
	// markers unresolved — and live, what its provider returned, as a
	// child of the current resource. It is called after the child's
	// provider applied it, so that state never misses a resource that
	// exists.
	ChildApplied(ctx context.Context, child, live *manifest.Resource) error
	// ChildDeleted forgets a child its provider deleted.
	ChildDeleted(ctx context.Context, id manifest.ID) error
	// ChildListed lists id among the current resource's children without
	// recording it on its own (a child applied in an earlier run, named
	// again by the provider).
	ChildListed(ctx context.Context, id manifest.ID) error
}
