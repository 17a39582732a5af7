// Package openctl is an embeddable engine for declarative infrastructure:
// it applies Kubernetes-style manifests (apiVersion, kind, metadata, spec,
// status) through providers — ordinary Go types compiled into the program —
// in dependency order, in parallel, and remembers what it did.
//
// # New and options
//
// [New] returns an [Engine] configured by options: [WithProviders] (or a
// shared [WithRegistry]), [WithStore] (default: in memory),
// [WithConcurrency] (default [DefaultConcurrency]), [WithLogger] (default:
// discard), [WithObserver] (progress events), [WithRetry],
// [WithReadyPolicy] and [WithLockWait]. The package example shows them
// together. Manifests come from package manifest (manifest.Load reads
// files); a provider is any registry.Provider.
//
// # Apply
//
// [Engine.Apply] builds one dependency graph over every resource in the
// call: the manifests given and the children that composite providers
// (registry.Planner) plan for them. A $ref marker in a spec (see package
// refs) is both an edge and a value, resolved from the live resource
// right before the dependent is applied; providers never see a raw $ref.
// Invalid input — a malformed manifest, an unknown apiVersion group, a
// malformed $ref, a $ref to a field its target's kind cannot have, a
// resource defined twice, a dependency cycle — fails the whole call before
// anything is touched, with every problem named. So do the preconditions
// checked once the state lock is taken: the state store's identity
// (handed to providers as registry.Call.Owner), a store that cannot seal the
// secrets it would have to record ([StateError]), and a $ref to a
// resource outside the call that does not exist.
//
// Independent resources run in parallel up to the concurrency bound; a
// failure skips only its dependents, and every resource gets a [Result].
// A resource whose resolved spec hashes to what state recorded, and which
// still exists, is not sent to its provider at all, so re-applying
// unchanged manifests makes no provider writes. The engine retries whole
// provider calls that fail with errcode.Transient, with capped exponential
// backoff and jitter; providers do not retry those calls themselves (the
// rule is spelled out at [WithRetry]). A provider that leaves a resource
// starting waits for it inside Apply. A panic in
// a provider is recovered and reported as an Internal error for that
// resource.
//
// # Plan
//
// [Engine.Plan] reports per resource create, update, replace or no-op, the
// changed fields and the execution waves, and renders the graph as
// Graphviz DOT. It changes nothing.
//
// # Delete
//
// [Engine.Delete] deletes in reverse dependency order, deletes a
// composite's children before it, and refuses to delete a child whose
// owner remains.
//
// # Validate
//
// [Engine.Validate] runs the checks Apply and Plan make before they touch
// anything, and reports every problem found.
//
// # Reading
//
// Three methods read what exists and what openctl recorded:
//
//   - [Engine.Get]: one resource, live through its provider and as the
//     state records it; [Found] says which, and Gone when it is recorded
//     but no longer exists.
//   - [Engine.Inventory]: the resources of a kind, recorded and live (or,
//     with FromState, recorded only, contacting no provider), ready to be
//     printed and applied again.
//   - [Engine.Records]: the state records themselves.
//
// Secrets follow one rule. The state keeps secret fields sealed, and a
// resource the read API returns never holds a recorded secret's value: a
// secret spec field of a recorded resource reads secret.Redacted
// ("[redacted]"), which Apply takes as "keep the sealed value", so printed
// output applied again keeps its secrets. Sealed records are opened —
// which needs a sealing store's passphrase — only where the secrets are
// needed: Get opens the one record it reads (its Secrets are
// secret.Secret values, which redact themselves when printed); Inventory
// opens records only with InventoryOptions.WithSecrets (without it, a
// sealed secret spec field is left out); Records never opens them.
//
// Live reads are retried like every provider call. For a provider action
// (start, stop, logs, ...) use [Engine.Do].
//
// # Events
//
// An observer set with [WithObserver] receives an [Event] for each step of
// each resource of an Apply or Delete — started, provider steps, retries,
// waiting for readiness, and the outcome — one at a time, each resource's
// in order, stamped (Event.Time) as they are delivered, so that times
// never decrease.
//
// # Errors
//
// Every error carries a code from package errcode (NotFound, Invalid,
// Conflict, Transient, ...): check it with errors.Is(err, errcode.NotFound)
// or read it with errcode.Of. An Apply or Delete that fails for some
// resources returns the failures joined, and a [Report] with a Result per
// resource; a resource skipped because a dependency failed has a
// [SkippedError].
//
// # Concurrency
//
// An Engine is safe for concurrent use. Apply and Delete take the state
// store's lock for their duration; a second operation on the same store
// fails at once with a Conflict error naming the holder, or waits (see
// WithLockWait).
package openctl
