package registry

import (
	"context"

	"github.com/openctl/openctl/manifest"
)

// Call is the half of the provider contract that is not a method: what
// the engine tells a provider about the call it is making. The engine
// installs one in the context of every provider call ([WithCall]); a
// provider reads it with [CallOf]. Every field may be zero — a provider
// used on its own, without an engine, gets the zero Call — and a
// provider must work then (without an owner mark, a prior or records).
type Call struct {
	// Owner is the identity of the state store the operation records
	// into (state.Identified), for every call of Apply, Plan and Delete;
	// "" when the store has none.
	//
	// Providers that mark what they create (a tag, a line in a
	// description) record it there, so that two openctl installations
	// with different state stores never adopt, change or delete each
	// other's resources of the same name: a resource marked with another
	// owner is an errcode.AlreadyExists error. A resource marked with no
	// owner (created before owners were recorded, or without an engine)
	// may be adopted.
	Owner string
	// Prior is the resource as the state last recorded it (spec as
	// written, status as last read, secret fields in clear), for every
	// Get, Apply, Delete and action of a kind whose Kind.ReadsPrior is
	// set, when there is a record; nil otherwise.
	//
	// A provider whose live resources cannot be found from their
	// identity alone — a K3s node is a service on a machine only its
	// last status locates — reads where to look from it, as Terraform
	// providers read their prior state; it must still read the resource
	// itself live, and answer errcode.NotFound when there is neither a
	// prior nor a way to find it.
	Prior *manifest.Resource
	// Records reads the state's records of a kind, for every call of
	// Apply, Plan, Delete and Get.
	Records Records
	// Cascade says the resource being deleted goes because its owner is
	// deleted in the same operation — a K3s node deleted with its whole
	// cluster need not be drained first — rather than on its own or
	// because its owner shrinks (a pruned child).
	Cascade bool
	// Parent is the composite the resource belongs to, as the operation
	// applies it now (its manifest as written, $refs unresolved), for the
	// Apply of a child its Plan produces and the Delete of one it no
	// longer produces (a cluster scaled down); nil otherwise. A K3s node
	// that leaves its cluster is drained under the cluster's drain policy
	// as now written.
	Parent *manifest.Resource
	// Children records what the provider applies or deletes through
	// other providers as the resource's children (see [ChildRecorder]),
	// for every Apply and Delete of a kind that is not Composite; nil
	// when what is applied then is recorded nowhere.
	Children ChildRecorder
	// Read reads another resource live, through its provider, as a $ref
	// to it is read (its record as Prior), for every call of Apply, Plan,
	// Delete and Get; nil otherwise. A provider whose resource lives on
	// another — a K3s node on a VM — asks it what it cannot see itself:
	// a node whose host does not answer is Stopped when its VM reads as
	// stopped.
	Read func(ctx context.Context, id manifest.ID) (*manifest.Resource, error)
	// Step receives the step the call is in ("cloning", "waiting for
	// guest agent"), to drive progress; nil when nobody watches. Report
	// through [Call.ReportStep]. It must be safe for concurrent use.
	Step func(step string)
}

// ReportStep tells whoever is watching which step the call is in. It does
// nothing when no one watches.
func (c Call) ReportStep(step string) {
	if c.Step != nil {
		c.Step(step)
	}
}

type callKey struct{}

// WithCall returns a context carrying c for the provider calls made with
// it. The engine's side of the contract; a test or a program calling a
// provider directly may install one too.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallOf returns the Call ctx carries: the zero Call when there is none.
func CallOf(ctx context.Context) Call {
	c, _ := ctx.Value(callKey{}).(Call)
	return c
}

// Records reads the state's records of a kind: what openctl knows it
// made, for providers whose resources refer to others by name and must
// check what exists (a K3s node joining "the" cluster, refused when
// there are several).
type Records interface {
	// Records returns the recorded resources of a kind, sorted by name.
	Records(ctx context.Context, apiVersion, kind string) ([]*manifest.Resource, error)
}
