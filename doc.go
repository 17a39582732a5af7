// Package openctl is an embeddable engine for declarative infrastructure:
// it applies Kubernetes-style manifests (apiVersion, kind, metadata, spec,
// status) through providers — ordinary Go types compiled into the program —
// in dependency order, in parallel, and remembers what it did.
//
// # Embedding
//
//	e, err := openctl.New(
//		openctl.WithProviders(proxmox.New(cfg), k3s.New(k3sCfg)),
//		openctl.WithStore(store),       // default: in memory
//		openctl.WithConcurrency(8),     // default: 4
//		openctl.WithLogger(logger),     // default: discard
//		openctl.WithObserver(progress), // per-resource events
//	)
//	resources, err := manifest.Load([]string{"cluster.yaml"}, manifest.LoadOptions{})
//	report, err := e.Apply(ctx, resources...)
//
// # What Apply does
//
// Apply builds one dependency graph over every resource in the call: the
// manifests given and the children that composite providers
// (registry.Planner) plan for them. A $ref marker in a spec,
//
//	spec:
//	  serverIP:
//	    $ref: {apiVersion: proxmox.openctl.io/v1, kind: VirtualMachine, name: cp-0, field: status.ip}
//
// is both an edge (this resource needs cp-0) and a value, resolved from the
// live resource right before this one is applied; providers never see a
// raw $ref. Children depend on nothing implicitly but their owner depends
// on them all. Invalid input — a malformed manifest, an unknown apiVersion
// group, a malformed $ref, a resource defined twice, a dependency cycle —
// fails the whole call before anything is touched, with every problem
// named.
//
// Independent resources run in parallel up to the concurrency bound; a
// failure skips only its dependents, and every resource gets a [Result].
// A resource whose resolved spec hashes to what state recorded, and which
// still exists, is not sent to its provider at all, so re-applying
// unchanged manifests makes no provider writes. Transient errors
// (errcode.Transient) are retried with capped exponential backoff and
// jitter ([RetryPolicy]); other errors are not. Providers that implement
// registry.ReadyChecker are polled until ready ([ReadyPolicy]). A panic in a
// provider is recovered and reported as an Internal error for that resource.
//
// [Engine.Plan] reports per resource create, update, replace or no-op, the
// changed fields and the execution waves, and renders the graph as
// Graphviz DOT. [Engine.Delete] deletes in reverse dependency order,
// deletes a composite's children before it, and refuses to delete a child
// whose owner remains.
//
// # Errors
//
// Every error carries a code (package errcode, re-exported here as
// ErrNotFound, ErrInvalid, ...): check it with errors.Is or [Code].
//
// # Concurrency
//
// An Engine is safe for concurrent use. Apply and Delete take the state
// store's lock for their duration; a second operation on the same store
// fails at once with a Conflict error naming the holder, or waits (see
// WithLockWait).
package openctl
